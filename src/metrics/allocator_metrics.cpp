#include "metrics/allocator_metrics.h"

#include <malloc.h>
#include <unistd.h>

#include <fstream>

namespace tempered::metrics {
namespace {

// The resident set from /proc/self/statm (its second field, in pages); 0 where it cannot be read.
double resident_bytes() {
    std::ifstream statm("/proc/self/statm");
    long size_pages = 0;
    long resident_pages = 0;
    if (!(statm >> size_pages >> resident_pages)) return 0;
    return static_cast<double>(resident_pages) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

}  // namespace

void watch_allocator(Registry& registry) {
    auto& in_use = registry.gauge("tempered:malloc_in_use_bytes", "Heap bytes the program holds (mallinfo2 uordblks).");
    auto& free = registry.gauge("tempered:malloc_free_bytes",
                                "Heap bytes freed by the program and kept by the allocator (mallinfo2 fordblks).");
    auto& mapped = registry.gauge("tempered:malloc_mapped_bytes",
                                  "Bytes in blocks the allocator mapped directly (mallinfo2 hblkhd).");
    auto& resident = registry.gauge("process_resident_memory_bytes", "Resident memory size in bytes.");
    registry.on_collect([&in_use, &free, &mapped, &resident] {
        const struct mallinfo2 info = mallinfo2();
        in_use.get().set(static_cast<double>(info.uordblks));
        free.get().set(static_cast<double>(info.fordblks));
        mapped.get().set(static_cast<double>(info.hblkhd));
        resident.get().set(resident_bytes());
    });
}

}  // namespace tempered::metrics
