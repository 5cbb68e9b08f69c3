#include "http/lifo_worker_pool.h"

#include <algorithm>

namespace tempered::http {

LifoWorkerPool::LifoWorkerPool(size_t threads) {
    const size_t count = std::max<size_t>(threads, 1);
    workers_.reserve(count);
    threads_.reserve(count);
    for (size_t i = 0; i < count; ++i) {
        workers_.push_back(std::make_unique<Worker>());
        threads_.emplace_back([this, worker = workers_.back().get()] { run(*worker); });
    }
}

LifoWorkerPool::~LifoWorkerPool() { shutdown(); }

void LifoWorkerPool::enqueue(std::function<void()> task) {
    std::lock_guard lock(mutex_);
    if (idle_.empty()) {
        waiting_.push_back(std::move(task));
        return;
    }
    Worker* worker = idle_.back();
    idle_.pop_back();
    worker->task = std::move(task);
    worker->wake.notify_one();
}

void LifoWorkerPool::shutdown() {
    {
        std::lock_guard lock(mutex_);
        if (shutting_down_) return;
        shutting_down_ = true;
        idle_.clear();
        for (auto& worker : workers_) worker->wake.notify_one();
    }
    for (auto& thread : threads_) thread.join();
}

size_t LifoWorkerPool::idle_threads() const {
    std::lock_guard lock(mutex_);
    return idle_.size();
}

size_t LifoWorkerPool::threads_used() const {
    std::lock_guard lock(mutex_);
    return static_cast<size_t>(
        std::count_if(workers_.begin(), workers_.end(), [](const auto& worker) { return worker->used; }));
}

// A worker is in idle_ exactly while it waits with no task: enqueue takes it out as it hands one over,
// shutdown empties the stack as it wakes everyone.
void LifoWorkerPool::run(Worker& self) {
    std::unique_lock lock(mutex_);
    for (;;) {
        if (!self.task && !waiting_.empty()) {
            self.task = std::move(waiting_.front());
            waiting_.pop_front();
        }
        if (!self.task) {
            if (shutting_down_) return;
            idle_.push_back(&self);
            self.wake.wait(lock, [&] { return self.task || shutting_down_; });
            continue;
        }
        std::function<void()> task = std::move(self.task);
        self.task = nullptr;
        self.used = true;
        lock.unlock();
        task();
        task = nullptr;  // whatever the task captured is released outside the lock
        lock.lock();
    }
}

}  // namespace tempered::http
