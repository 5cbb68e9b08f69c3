// Work made of whole items (a routed expert, an attention head) that each thread runs start to finish,
// its own matmuls on a one-thread pool of its own: one dispatch of the threads for all items instead of
// one per matmul of each item, which at a decode step's small matmuls costs more than it splits.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/thread_pool.h"

namespace tempered {

class WholeItemsPerThread {
public:
    // Calls body(item, thread_index, own) once for each item of [0, count), the threads of `pool` taking
    // items in turn; `own` is the calling thread's one-thread pool. A count of one runs on the caller.
    void run(ThreadPool& pool, int64_t count,
             const std::function<void(int64_t item, int thread_index, ThreadPool& own)>& body);

private:
    std::vector<std::unique_ptr<ThreadPool>> single_thread_pools_;  // (threads): made on demand
};

}  // namespace tempered
