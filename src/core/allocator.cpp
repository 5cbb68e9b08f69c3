#include "core/allocator.h"

#include <malloc.h>
#include <unistd.h>

#include <fstream>

// jemalloc's control interface, resolved only when the binary links jemalloc (a weak reference: null
// otherwise), so one build serves both allocators without a compile-time switch.
extern "C" int mallctl(const char* name, void* old_value, size_t* old_length, void* new_value, size_t new_length)
    __attribute__((weak));

namespace tempered {
namespace {

// One of jemalloc's size_t statistics; 0 when it cannot be read.
int64_t jemalloc_statistic(const char* name) {
    size_t value = 0;
    size_t length = sizeof(value);
    if (mallctl(name, &value, &length, nullptr, 0) != 0) return 0;
    return static_cast<int64_t>(value);
}

}  // namespace

bool allocator_is_jemalloc() { return mallctl != nullptr; }

std::string allocator_name() {
    if (!allocator_is_jemalloc()) return "glibc";
    const char* version = nullptr;
    size_t length = sizeof(version);
    if (mallctl("version", static_cast<void*>(&version), &length, nullptr, 0) != 0 || version == nullptr)
        return "jemalloc";
    return std::string("jemalloc ") + version;
}

AllocatorStats allocator_stats() {
    if (!allocator_is_jemalloc()) {
        const struct mallinfo2 info = mallinfo2();
        return {static_cast<int64_t>(info.uordblks), static_cast<int64_t>(info.fordblks),
                static_cast<int64_t>(info.hblkhd)};
    }
    uint64_t epoch = 1;  // writing the epoch refreshes the statistics jemalloc caches
    size_t length = sizeof(epoch);
    mallctl("epoch", &epoch, &length, &epoch, length);
    const int64_t allocated = jemalloc_statistic("stats.allocated");
    const int64_t resident = jemalloc_statistic("stats.resident");
    return {allocated, resident > allocated ? resident - allocated : 0, jemalloc_statistic("stats.mapped")};
}

void release_free_pages() {
    if (!allocator_is_jemalloc()) {
        malloc_trim(0);
        return;
    }
    // "arena.<MALLCTL_ARENAS_ALL>.purge": every arena's unused dirty pages, now rather than at decay.
    mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0);
}

int64_t resident_set_bytes() {
    std::ifstream statm("/proc/self/statm");
    int64_t size_pages = 0;
    int64_t resident_pages = 0;
    if (!(statm >> size_pages >> resident_pages)) return 0;
    return resident_pages * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace tempered
