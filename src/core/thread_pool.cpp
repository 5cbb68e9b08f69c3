#include "core/thread_pool.h"

#include <algorithm>
#include <chrono>

namespace tempered {
namespace {

constexpr auto kSpinTime = std::chrono::microseconds(100);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

// Spins until done() or kSpinTime has passed; returns done().
template <typename Predicate>
bool spin_until(Predicate done) {
    const auto deadline = std::chrono::steady_clock::now() + kSpinTime;
    while (!done()) {
        for (int i = 0; i < 64; ++i) {
            cpu_relax();
            if (done()) return true;
        }
        if (std::chrono::steady_clock::now() > deadline) return done();
        std::this_thread::yield();  // when cores are oversubscribed, let the thread we wait for run
    }
    return true;
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
    const int worker_count = std::max(threads, 1) - 1;
    workers_.reserve(static_cast<size_t>(worker_count));
    for (int i = 0; i < worker_count; ++i) workers_.emplace_back([this, i] { worker_loop(i + 1); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard lock(mutex_);
        stopping_.store(true, std::memory_order_release);
        generation_.fetch_add(1, std::memory_order_release);  // wakes spinners too
    }
    work_ready_.notify_all();
    for (auto& worker : workers_) worker.join();
}

void ThreadPool::worker_loop(int thread_index) {
    uint64_t seen_generation = 0;
    while (true) {
        const auto new_work = [&] { return generation_.load(std::memory_order_acquire) != seen_generation; };
        if (!spin_until(new_work)) {
            std::unique_lock lock(mutex_);
            work_ready_.wait(lock, new_work);
        }
        seen_generation = generation_.load(std::memory_order_acquire);
        if (stopping_.load(std::memory_order_acquire)) return;
        (*task_)(thread_index);
        if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
            std::lock_guard lock(mutex_);  // the caller may be about to sleep: serialise with its check
            work_done_.notify_one();
        }
    }
}

void ThreadPool::run_on_all(const std::function<void(int)>& task) {
    if (workers_.empty()) {
        task(0);
        return;
    }
    // One task at a time: a second thread calling in (a test computing a reference while the engine
    // runs) waits its turn instead of corrupting the shared task slot.
    std::lock_guard caller_lock(caller_mutex_);
    task_ = &task;
    pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
    {
        std::lock_guard lock(mutex_);
        generation_.fetch_add(1, std::memory_order_release);
    }
    work_ready_.notify_all();
    task(0);
    const auto all_done = [&] { return pending_.load(std::memory_order_acquire) == 0; };
    if (!spin_until(all_done)) {
        std::unique_lock lock(mutex_);
        work_done_.wait(lock, all_done);
    }
}

void ThreadPool::parallel_for(int64_t count, const std::function<void(int64_t, int64_t)>& body) {
    const int64_t threads = size();
    run_on_all([&](int thread_index) {
        const int64_t begin = count * thread_index / threads;
        const int64_t end = count * (thread_index + 1) / threads;
        if (begin < end) body(begin, end);
    });
}

void ThreadPool::parallel_for_dynamic(int64_t count, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
    grain = std::max<int64_t>(grain, 1);
    if (workers_.empty() || count <= grain) {
        if (count > 0) body(0, count);
        return;
    }
    std::atomic<int64_t> next{0};  // lives until run_on_all returns, when every thread is done with it
    run_on_all([&](int) {
        for (int64_t begin = next.fetch_add(grain); begin < count; begin = next.fetch_add(grain))
            body(begin, std::min(begin + grain, count));
    });
}

}  // namespace tempered
