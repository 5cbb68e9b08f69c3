// The HTTP worker pool hands each task to the thread that went idle last, so a steady trickle of
// connections is served by one thread, not by every thread in turn (the resident-memory creep of
// cpp-httplib's first-in-first-out wake-up), and it still runs everything when all threads are busy.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <set>
#include <thread>
#include <vector>

#include "http/lifo_worker_pool.h"

namespace tempered::http {
namespace {
namespace http_lifo_worker_pool_test {

using namespace std::chrono_literals;

// Waits until every thread of the pool is idle (a finished task's thread goes back on the stack just
// after the task returns).
void wait_all_idle(const LifoWorkerPool& pool, size_t threads) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (pool.idle_threads() != threads && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(1ms);
    ASSERT_EQ(pool.idle_threads(), threads);
}

TEST(LifoWorkerPool, OneTaskAtATimeIsAlwaysServedByTheSameThread) {
    constexpr size_t kThreads = 16;
    LifoWorkerPool pool(kThreads);
    std::set<std::thread::id> served_by;
    for (int i = 0; i < 50; ++i) {
        wait_all_idle(pool, kThreads);
        std::promise<std::thread::id> ran;
        pool.enqueue([&ran] { ran.set_value(std::this_thread::get_id()); });
        served_by.insert(ran.get_future().get());
    }
    EXPECT_EQ(served_by.size(), 1u);
    EXPECT_EQ(pool.threads_used(), 1u);
}

TEST(LifoWorkerPool, ConcurrentTasksUseOnlyAsManyThreadsAsAreBusyAtOnce) {
    constexpr size_t kThreads = 32;
    LifoWorkerPool pool(kThreads);
    for (int round = 0; round < 20; ++round) {
        wait_all_idle(pool, kThreads);
        std::atomic<int> started{0};
        std::promise<void> release;
        std::shared_future<void> released = release.get_future().share();
        std::vector<std::future<void>> done;
        for (int i = 0; i < 4; ++i) {
            auto finished = std::make_shared<std::promise<void>>();
            done.push_back(finished->get_future());
            pool.enqueue([&started, released, finished] {
                ++started;
                released.wait();
                finished->set_value();
            });
        }
        while (started.load() < 4) std::this_thread::sleep_for(1ms);
        release.set_value();
        for (auto& task : done) task.get();
    }
    EXPECT_EQ(pool.threads_used(), 4u);
}

TEST(LifoWorkerPool, TasksBeyondTheThreadsWaitAndAllRun) {
    LifoWorkerPool pool(2);
    std::atomic<int> ran{0};
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    for (int i = 0; i < 2; ++i)
        pool.enqueue([&ran, released] {
            released.wait();
            ++ran;
        });
    for (int i = 0; i < 100; ++i) pool.enqueue([&ran] { ++ran; });
    EXPECT_EQ(ran.load(), 0);
    release.set_value();
    pool.shutdown();  // runs what is queued before it joins
    EXPECT_EQ(ran.load(), 102);
    pool.shutdown();  // a second call does nothing
}

TEST(LifoWorkerPool, ShutdownOfAnIdlePoolReturns) {
    LifoWorkerPool pool(64);
    wait_all_idle(pool, 64);
    pool.shutdown();
    EXPECT_EQ(pool.threads_used(), 0u);
}

}  // namespace http_lifo_worker_pool_test
}  // namespace
}  // namespace tempered::http
