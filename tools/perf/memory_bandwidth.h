// STREAM's triad, a(i) = b(i) + s * c(i), on every thread of a pool: how fast this machine's cores
// stream from memory when the arrays are far larger than the caches. Decoding one token at batch 1
// reads every weight once, so bandwidth / weight bytes per token (weight_traffic.h) bounds its speed.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/result.h"
#include "core/thread_pool.h"

namespace tempered {

struct TriadOptions {
    int64_t elements_per_array = 0;  // doubles in each of a, b and c
    int repetitions = 10;            // timed runs after one untimed one; STREAM's NTIMES
};

struct TriadResult {
    int64_t elements_per_array = 0;
    int threads = 0;
    // Bytes one run moves, counted as STREAM counts them: 3 arrays x 8 bytes per double (b and c read,
    // a written). The read a cache line costs before it is written (write-allocate) is not counted, so
    // the real traffic is up to 4/3 of this.
    int64_t bytes_per_run = 0;
    std::vector<double> seconds;  // each timed run

    double best_gb_per_second() const;  // bytes_per_run / fastest run / 1e9: STREAM's "Best Rate"
    double mean_gb_per_second() const;  // bytes_per_run / mean run time / 1e9
};

// Allocates the three arrays (each thread first touches the part it later streams), runs the triad,
// and checks every a(i). An Error for a size below one element per thread, or a wrong result.
Result<TriadResult> run_triad(ThreadPool& pool, const TriadOptions& options);

// The size of the largest cache of cpu0 as Linux reports it (/sys/devices/system/cpu/cpu0/cache);
// nullopt where it is not reported. STREAM asks for arrays of at least 4x this. In a virtual machine it
// is the host's cache, shared with other guests.
std::optional<int64_t> last_level_cache_bytes();

}  // namespace tempered
