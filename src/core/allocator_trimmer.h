// Gives the memory the allocator keeps free back to the system, every few seconds. glibc keeps what a
// server's threads free in up to 16 arenas and returns it only from the top of each heap; freed chunks
// in the middle stay resident, and as requests of every size come and go they spread over more pages:
// the soak's resident size crept about 0.3 MiB a minute with the program's own heap flat
// (bench/results/soak-rss-diagnosis-2026-12-07.md). malloc_trim(0) releases every whole free page of
// every arena (madvise). The server links jemalloc, which returns pages on its own as they decay (about
// 10 s) but only when something allocates: the trim (a purge there) also empties an idle server.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "core/allocator.h"

namespace tempered {

struct AllocatorTrimStats {
    int64_t trims = 0;
    double seconds = 0;          // spent trimming, all calls together
    double longest_seconds = 0;  // one call's longest: each arena is locked while it is trimmed
    int64_t released_bytes = 0;  // the resident size's drop across each call, summed (other threads
                                 // allocate meanwhile, so an estimate)
};

class AllocatorTrimmer {
public:
    // Starts a thread that trims every `interval`; a zero interval starts nothing.
    explicit AllocatorTrimmer(std::chrono::milliseconds interval);
    ~AllocatorTrimmer();
    AllocatorTrimmer(const AllocatorTrimmer&) = delete;
    AllocatorTrimmer& operator=(const AllocatorTrimmer&) = delete;

    AllocatorTrimStats stats() const;

    // One trim now, on the calling thread; what it did is added to stats().
    void trim_now();

private:
    void run();

    const std::chrono::milliseconds interval_;
    mutable std::mutex mutex_;
    std::condition_variable stop_requested_;
    bool stopping_ = false;
    AllocatorTrimStats stats_;
    std::thread thread_;
};

}  // namespace tempered
