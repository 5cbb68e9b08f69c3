#include "core/whole_items_per_thread.h"

#include <atomic>
#include <cstddef>

namespace tempered {

void WholeItemsPerThread::run(ThreadPool& pool, int64_t count,
                              const std::function<void(int64_t, int, ThreadPool&)>& body) {
    while (static_cast<int>(single_thread_pools_.size()) < pool.size())
        single_thread_pools_.push_back(std::make_unique<ThreadPool>(1));
    if (count == 1) {
        body(0, 0, *single_thread_pools_[0]);
        return;
    }
    std::atomic<int64_t> next{0};  // lives until run_on_all returns, when every thread is done with it
    pool.run_on_all([&](int thread) {
        ThreadPool& own = *single_thread_pools_[static_cast<size_t>(thread)];
        for (int64_t item = next.fetch_add(1); item < count; item = next.fetch_add(1)) body(item, thread, own);
    });
}

}  // namespace tempered
