// The memory allocator's own account of the process's heap, as gauges: what the program holds, what the
// allocator keeps beyond that, and what it maps (core/allocator.h: glibc's or jemalloc's figures). A resident
// size that creeps while "in use" stays flat is the allocator holding freed memory (fragmentation), not a
// leak; the soak (bench/soak.py) records both.
#pragma once

#include "core/allocator_trimmer.h"
#include "metrics/metrics.h"

namespace tempered::metrics {

// Registers tempered:malloc_in_use_bytes, tempered:malloc_free_bytes, tempered:malloc_mapped_bytes and
// process_resident_memory_bytes, read at every scrape (glibc's mallinfo2 walks the arenas under their
// locks: microseconds, once per scrape). With a trimmer, also tempered:malloc_trims_total,
// tempered:malloc_trim_seconds_total, tempered:malloc_trim_longest_seconds and
// tempered:malloc_trim_released_bytes_total; the trimmer must outlive the registry's scrapes.
void watch_allocator(Registry& registry, const AllocatorTrimmer* trimmer = nullptr);

}  // namespace tempered::metrics
