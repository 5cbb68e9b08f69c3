// The allocator's gauges (metrics/allocator_metrics.h): read at every scrape, they follow what the program
// holds: 64 MiB allocated in 1 MiB blocks (below glibc's mmap threshold once it has grown, or mapped: either
// way counted) raise "in use" plus "mapped" by about that much, and the resident size is the process's own.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "metrics/allocator_metrics.h"

namespace tempered::metrics {
namespace {
namespace metrics_allocator_test {

// The value on the line "NAME VALUE" of the exposition text; -1 when there is none.
double value_of(const std::string& text, const std::string& name) {
    const std::string key = "\n" + name + " ";
    const size_t at = ("\n" + text).find(key);
    if (at == std::string::npos) return -1;
    return std::stod(text.substr(at + key.size() - 1));
}

TEST(AllocatorMetrics, InUseFollowsWhatTheProgramHolds) {
#if defined(__SANITIZE_ADDRESS__)
    GTEST_SKIP() << "ASan's allocator replaces glibc's, whose statistics mallinfo2 reads";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    GTEST_SKIP() << "ASan's allocator replaces glibc's, whose statistics mallinfo2 reads";
#endif
#endif
    Registry registry;
    watch_allocator(registry);
    const std::string before = registry.render();
    const double held_before =
        value_of(before, "tempered:malloc_in_use_bytes") + value_of(before, "tempered:malloc_mapped_bytes");
    EXPECT_GT(value_of(before, "tempered:malloc_in_use_bytes"), 0);
    EXPECT_GE(value_of(before, "tempered:malloc_free_bytes"), 0);
    EXPECT_GT(value_of(before, "process_resident_memory_bytes"), 1 << 20);

    std::vector<char*> blocks;
    for (int i = 0; i < 64; ++i) {
        blocks.push_back(static_cast<char*>(std::malloc(1 << 20)));
        std::memset(blocks.back(), i, 1 << 20);  // touched, so resident
    }
    const std::string during = registry.render();
    const double held_during =
        value_of(during, "tempered:malloc_in_use_bytes") + value_of(during, "tempered:malloc_mapped_bytes");
    EXPECT_GE(held_during - held_before, 63.0 * (1 << 20));
    EXPECT_LE(held_during - held_before, 80.0 * (1 << 20));
    for (char* block : blocks) std::free(block);
}

TEST(AllocatorMetrics, TrimmerTotalsAreCountersAtEveryScrape) {
    AllocatorTrimmer trimmer(std::chrono::milliseconds(0));
    Registry registry;
    watch_allocator(registry, &trimmer);
    EXPECT_EQ(value_of(registry.render(), "tempered:malloc_trims_total"), 0);
    trimmer.trim_now();
    trimmer.trim_now();
    const std::string text = registry.render();
    EXPECT_EQ(value_of(text, "tempered:malloc_trims_total"), 2);
    EXPECT_GT(value_of(text, "tempered:malloc_trim_seconds_total"), 0);
    EXPECT_GE(value_of(text, "tempered:malloc_trim_released_bytes_total"), 0);
    EXPECT_NE(text.find("# TYPE tempered:malloc_trims_total counter"), std::string::npos);
}

}  // namespace metrics_allocator_test
}  // namespace
}  // namespace tempered::metrics
