// The allocator trimmer (core/allocator_trimmer.h) gives freed memory in the middle of the heap back to the
// system: 48 MiB of small blocks, freed except the last (which keeps free() itself from shrinking the
// heap's top), stay resident until a trim, and one trim drops the resident size by most of it.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "core/allocator_trimmer.h"

namespace tempered {
namespace {
namespace core_allocator_trimmer_test {

using namespace std::chrono_literals;

// ASan's and TSan's allocators replace glibc's, which malloc_trim trims.
bool under_a_sanitizer_allocator() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
    return true;
#endif
#endif
    return false;
}

TEST(AllocatorTrimmer, GivesFreedPagesInTheMiddleOfTheHeapBack) {
    if (under_a_sanitizer_allocator())
        GTEST_SKIP() << "a sanitizer's allocator replaces glibc's, which malloc_trim trims";
    constexpr size_t kBlock = 256;
    constexpr size_t kBlocks = (48u << 20) / kBlock;
    std::vector<char*> blocks;
    blocks.reserve(kBlocks);
    for (size_t i = 0; i < kBlocks; ++i) {
        blocks.push_back(static_cast<char*>(std::malloc(kBlock)));
        std::memset(blocks.back(), 1, kBlock);
    }
    for (size_t i = 0; i + 1 < kBlocks; ++i) std::free(blocks[i]);
    const int64_t resident_freed = resident_set_bytes();

    AllocatorTrimmer trimmer(0ms);
    trimmer.trim_now();
    const int64_t resident_trimmed = resident_set_bytes();
    std::free(blocks.back());

    EXPECT_GT(resident_freed - resident_trimmed, int64_t{32} << 20);
    const AllocatorTrimStats stats = trimmer.stats();
    EXPECT_EQ(stats.trims, 1);
    EXPECT_GT(stats.released_bytes, int64_t{32} << 20);
    EXPECT_GT(stats.seconds, 0.0);
    EXPECT_EQ(stats.longest_seconds, stats.seconds);
}

TEST(AllocatorTrimmer, TrimsOnItsOwnEveryInterval) {
    AllocatorTrimmer trimmer(20ms);
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (trimmer.stats().trims < 3 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
    EXPECT_GE(trimmer.stats().trims, 3);
}

TEST(AllocatorTrimmer, ZeroIntervalNeverTrims) {
    AllocatorTrimmer trimmer(0ms);
    std::this_thread::sleep_for(50ms);
    EXPECT_EQ(trimmer.stats().trims, 0);
}

}  // namespace core_allocator_trimmer_test
}  // namespace
}  // namespace tempered
