// The HTTP server's worker threads. A task (one connection, served until it closes) goes to the thread
// that went idle most recently. cpp-httplib's own pool wakes its idle threads in turn, so under steady
// load every one of its 512 threads serves a connection now and then, and each fills its own allocator
// caches (glibc keeps up to 7 freed chunks per size class per thread) and stack pages: resident memory
// crept for hours (bench/results/soak-rss-diagnosis-2026-12-07.md). Last in, first out, only as many
// threads as are ever busy at once touch memory; the rest stay asleep for slow-client bursts.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace tempered::http {

class LifoWorkerPool {
public:
    explicit LifoWorkerPool(size_t threads);
    ~LifoWorkerPool();
    LifoWorkerPool(const LifoWorkerPool&) = delete;
    LifoWorkerPool& operator=(const LifoWorkerPool&) = delete;

    // Runs `task` on the most recently idle thread, or queues it (first in, first out) while all are busy.
    void enqueue(std::function<void()> task);
    // Runs what is queued, then stops and joins every thread. Idempotent.
    void shutdown();

    size_t idle_threads() const;
    // How many distinct threads have run at least one task since start.
    size_t threads_used() const;

private:
    struct Worker {
        std::condition_variable wake;
        std::function<void()> task;
        bool used = false;
    };
    void run(Worker& self);

    mutable std::mutex mutex_;
    std::vector<std::unique_ptr<Worker>> workers_;
    std::vector<Worker*> idle_;  // the most recently idle at the back
    std::deque<std::function<void()>> waiting_;
    bool shutting_down_ = false;
    std::vector<std::thread> threads_;
};

}  // namespace tempered::http
