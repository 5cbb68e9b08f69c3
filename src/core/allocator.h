// The process's malloc, whichever it is: jemalloc where the binary links it (the server does: its size
// classes and decay keep the resident size flat under many HTTP threads, where glibc's arenas crept;
// bench/results/soak-rss-fix-2026-12-07.md), else glibc's (the sanitizer builds, tools, tests).
#pragma once

#include <cstdint>
#include <string>

namespace tempered {

struct AllocatorStats {
    int64_t in_use_bytes = 0;  // held by the program
    int64_t free_bytes = 0;    // glibc: freed by the program, kept by the allocator (resident or not);
                               // jemalloc: resident beyond what the program holds (dirty pages, metadata)
    int64_t mapped_bytes = 0;  // glibc: blocks mapped directly; jemalloc: its active extents
};

// "jemalloc 5.3.0-0-g..." or "glibc".
std::string allocator_name();
bool allocator_is_jemalloc();

// glibc: mallinfo2 (walks the arenas under their locks); jemalloc: its statistics, refreshed.
AllocatorStats allocator_stats();

// Gives every whole free page back to the system: glibc's malloc_trim(0), jemalloc's purge of all arenas.
void release_free_pages();

// The process's resident set in bytes (/proc/self/statm); 0 where it cannot be read.
int64_t resident_set_bytes();

}  // namespace tempered
