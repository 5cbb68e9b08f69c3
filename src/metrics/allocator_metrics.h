// The memory allocator's own account of the process's heap, as gauges: what the program holds, what the
// allocator keeps free (freed by the program, not given back to the system), and what it maps directly. A
// resident size that creeps while "in use" stays flat is the allocator holding freed memory (fragmentation
// over many arenas), not a leak; the soak (bench/soak.py) records both.
#pragma once

#include "metrics/metrics.h"

namespace tempered::metrics {

// Registers tempered:malloc_in_use_bytes, tempered:malloc_free_bytes, tempered:malloc_mapped_bytes and
// process_resident_memory_bytes, read at every scrape (glibc's mallinfo2 walks the arenas under their locks:
// microseconds, once per scrape).
void watch_allocator(Registry& registry);

}  // namespace tempered::metrics
