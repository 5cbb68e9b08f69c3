#include "core/allocator_trimmer.h"

#include <algorithm>

namespace tempered {

AllocatorTrimmer::AllocatorTrimmer(std::chrono::milliseconds interval) : interval_(interval) {
    if (interval_.count() > 0) thread_ = std::thread([this] { run(); });
}

AllocatorTrimmer::~AllocatorTrimmer() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    stop_requested_.notify_all();
    if (thread_.joinable()) thread_.join();
}

AllocatorTrimStats AllocatorTrimmer::stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
}

void AllocatorTrimmer::trim_now() {
    const int64_t resident_before = resident_set_bytes();
    const auto start = std::chrono::steady_clock::now();
    release_free_pages();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const int64_t released = std::max<int64_t>(0, resident_before - resident_set_bytes());
    std::lock_guard lock(mutex_);
    ++stats_.trims;
    stats_.seconds += seconds;
    stats_.longest_seconds = std::max(stats_.longest_seconds, seconds);
    stats_.released_bytes += released;
}

void AllocatorTrimmer::run() {
    std::unique_lock lock(mutex_);
    while (!stop_requested_.wait_for(lock, interval_, [this] { return stopping_; })) {
        lock.unlock();
        trim_now();
        lock.lock();
    }
}

}  // namespace tempered
