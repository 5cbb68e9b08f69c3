#include "metrics/allocator_metrics.h"

#include "core/allocator.h"

namespace tempered::metrics {

namespace {

// Counters follow the trimmer's running totals.
void watch_trimmer(Registry& registry, const AllocatorTrimmer& trimmer) {
    auto& trims = registry.counter("tempered:malloc_trims_total", "Times the allocator's free pages were given back.");
    auto& seconds = registry.counter("tempered:malloc_trim_seconds_total", "Time spent giving free pages back.");
    auto& longest = registry.gauge("tempered:malloc_trim_longest_seconds", "The longest single malloc_trim call.");
    auto& released = registry.counter("tempered:malloc_trim_released_bytes_total",
                                      "Resident bytes given back by malloc_trim (the resident size's drop).");
    registry.on_collect([&trimmer, &trims, &seconds, &longest, &released] {
        const AllocatorTrimStats stats = trimmer.stats();
        auto follow = [](Counter& counter, double total) { counter.inc(total - counter.value()); };
        follow(trims.get(), static_cast<double>(stats.trims));
        follow(seconds.get(), stats.seconds);
        follow(released.get(), static_cast<double>(stats.released_bytes));
        longest.get().set(stats.longest_seconds);
    });
}

}  // namespace

void watch_allocator(Registry& registry, const AllocatorTrimmer* trimmer) {
    auto& in_use = registry.gauge("tempered:malloc_in_use_bytes", "Heap bytes the program holds.");
    auto& free = registry.gauge("tempered:malloc_free_bytes",
                                "Heap bytes the allocator keeps beyond what the program holds (core/allocator.h).");
    auto& mapped = registry.gauge("tempered:malloc_mapped_bytes",
                                  "Bytes the allocator has mapped (glibc: blocks mapped directly).");
    auto& resident = registry.gauge("process_resident_memory_bytes", "Resident memory size in bytes.");
    registry.on_collect([&in_use, &free, &mapped, &resident] {
        const AllocatorStats stats = allocator_stats();
        in_use.get().set(static_cast<double>(stats.in_use_bytes));
        free.get().set(static_cast<double>(stats.free_bytes));
        mapped.get().set(static_cast<double>(stats.mapped_bytes));
        resident.get().set(static_cast<double>(resident_set_bytes()));
    });
    if (trimmer != nullptr) watch_trimmer(registry, *trimmer);
}

}  // namespace tempered::metrics
