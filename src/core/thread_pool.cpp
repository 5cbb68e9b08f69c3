#include "core/thread_pool.h"

#include <algorithm>

namespace tempered {

ThreadPool::ThreadPool(int threads) {
    const int worker_count = std::max(threads, 1) - 1;
    workers_.reserve(static_cast<size_t>(worker_count));
    for (int i = 0; i < worker_count; ++i) workers_.emplace_back([this, i] { worker_loop(i + 1); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    work_ready_.notify_all();
    for (auto& worker : workers_) worker.join();
}

void ThreadPool::worker_loop(int thread_index) {
    uint64_t seen_generation = 0;
    while (true) {
        const std::function<void(int)>* task;
        {
            std::unique_lock lock(mutex_);
            work_ready_.wait(lock, [&] { return stopping_ || generation_ != seen_generation; });
            if (stopping_) return;
            seen_generation = generation_;
            task = task_;
        }
        (*task)(thread_index);
        {
            std::lock_guard lock(mutex_);
            if (--pending_ == 0) work_done_.notify_one();
        }
    }
}

void ThreadPool::run_on_all(const std::function<void(int)>& task) {
    if (workers_.empty()) {
        task(0);
        return;
    }
    {
        std::lock_guard lock(mutex_);
        task_ = &task;
        pending_ = static_cast<int>(workers_.size());
        ++generation_;
    }
    work_ready_.notify_all();
    task(0);
    std::unique_lock lock(mutex_);
    work_done_.wait(lock, [&] { return pending_ == 0; });
}

void ThreadPool::parallel_for(int64_t count, const std::function<void(int64_t, int64_t)>& body) {
    const int64_t threads = size();
    run_on_all([&](int thread_index) {
        const int64_t begin = count * thread_index / threads;
        const int64_t end = count * (thread_index + 1) / threads;
        if (begin < end) body(begin, end);
    });
}

}  // namespace tempered
