// A fixed set of worker threads that run one parallel_for at a time. The forward pass calls it hundreds
// of times per token, so workers stay alive, and both sides spin briefly (~100 us) on atomics before
// falling back to sleeping on a condition variable: a futex wake-up costs tens of microseconds.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tempered {

class ThreadPool {
public:
    // `threads` counts the calling thread too: ThreadPool(2) starts one worker.
    explicit ThreadPool(int threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return static_cast<int>(workers_.size()) + 1; }

    // Calls task(thread_index) once on each of the size() threads and returns when all are done.
    // Safe to call from several threads; the calls run one after another. Not reentrant from a task.
    void run_on_all(const std::function<void(int thread_index)>& task);

    // Splits [0, count) into size() contiguous ranges, one per thread: body(begin, end).
    void parallel_for(int64_t count, const std::function<void(int64_t begin, int64_t end)>& body);

    // Splits [0, count) into ranges of `grain` that the threads take in turn until none is left, so a
    // thread slowed down by something else (an interrupt, the HTTP threads) does not hold up the rest.
    // A pool of one thread, or a count within one grain, runs body(0, count) on the caller.
    void parallel_for_dynamic(int64_t count, int64_t grain,
                              const std::function<void(int64_t begin, int64_t end)>& body);

private:
    void worker_loop(int thread_index);

    std::vector<std::thread> workers_;
    std::mutex caller_mutex_;  // held for a whole run_on_all: callers from several threads take turns
    std::mutex mutex_;
    std::condition_variable work_ready_;
    std::condition_variable work_done_;
    const std::function<void(int)>* task_ = nullptr;  // written before generation_ is bumped
    std::atomic<uint64_t> generation_{0};             // bumped under mutex_ for each run_on_all
    std::atomic<int> pending_{0};                     // workers still running the current task
    std::atomic<bool> stopping_{false};               // set under mutex_ with a generation bump
};

}  // namespace tempered
