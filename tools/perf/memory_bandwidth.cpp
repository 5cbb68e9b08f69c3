#include "perf/memory_bandwidth.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>
#include <string>

namespace tempered {
namespace {

constexpr double kScalar = 3.0;  // s
constexpr double kB = 2.0, kC = 0.5, kExpectedA = kB + kScalar * kC;

// Kept out of line with restrict pointers, so that the compiler vectorizes it as one plain loop.
[[gnu::noinline]] void triad(double* __restrict a, const double* __restrict b, const double* __restrict c,
                             int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) a[i] = b[i] + kScalar * c[i];
}

}  // namespace

double TriadResult::best_gb_per_second() const {
    if (seconds.empty()) return 0.0;
    return static_cast<double>(bytes_per_run) / *std::min_element(seconds.begin(), seconds.end()) / 1e9;
}

double TriadResult::mean_gb_per_second() const {
    if (seconds.empty()) return 0.0;
    const double mean = std::accumulate(seconds.begin(), seconds.end(), 0.0) / static_cast<double>(seconds.size());
    return static_cast<double>(bytes_per_run) / mean / 1e9;
}

Result<TriadResult> run_triad(ThreadPool& pool, const TriadOptions& options) {
    const int64_t n = options.elements_per_array;
    if (n < pool.size()) return Error{"triad: need at least one element per thread"};
    if (options.repetitions < 1) return Error{"triad: need at least one repetition"};
    auto a = std::make_unique_for_overwrite<double[]>(static_cast<size_t>(n));  // (n)
    auto b = std::make_unique_for_overwrite<double[]>(static_cast<size_t>(n));  // (n)
    auto c = std::make_unique_for_overwrite<double[]>(static_cast<size_t>(n));  // (n)
    // parallel_for splits [0, n) the same way every call, so each thread first touches (and, on a
    // NUMA machine, places) the pages it streams later.
    pool.parallel_for(n, [&](int64_t begin, int64_t end) {
        std::fill(a.get() + begin, a.get() + end, 0.0);
        std::fill(b.get() + begin, b.get() + end, kB);
        std::fill(c.get() + begin, c.get() + end, kC);
    });
    const auto body = [&](int64_t begin, int64_t end) { triad(a.get(), b.get(), c.get(), begin, end); };

    TriadResult result;
    result.elements_per_array = n;
    result.threads = pool.size();
    result.bytes_per_run = 3 * static_cast<int64_t>(sizeof(double)) * n;
    pool.parallel_for(n, body);  // untimed: page faults and frequency ramp-up
    for (int r = 0; r < options.repetitions; ++r) {
        const auto start = std::chrono::steady_clock::now();
        pool.parallel_for(n, body);
        result.seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }

    std::atomic<int64_t> wrong{0};
    pool.parallel_for(n, [&](int64_t begin, int64_t end) {
        int64_t count = 0;
        for (int64_t i = begin; i < end; ++i) count += a[i] != kExpectedA;
        wrong += count;
    });
    if (wrong.load() != 0) return Error{"triad: " + std::to_string(wrong.load()) + " elements hold a wrong value"};
    return result;
}

std::optional<int64_t> last_level_cache_bytes() {
    namespace fs = std::filesystem;
    std::error_code error;
    int best_level = 0;
    std::optional<int64_t> best;
    for (const auto& entry : fs::directory_iterator("/sys/devices/system/cpu/cpu0/cache", error)) {
        if (!entry.path().filename().string().starts_with("index")) continue;
        int level = 0;
        std::string size;  // e.g. "491520K"
        if (!(std::ifstream(entry.path() / "level") >> level) || !(std::ifstream(entry.path() / "size") >> size))
            continue;
        if (level <= best_level || size.empty()) continue;
        int64_t bytes = 0;
        const auto [unit_at, parse_error] = std::from_chars(size.data(), size.data() + size.size(), bytes);
        if (parse_error != std::errc{}) continue;
        const char unit = unit_at < size.data() + size.size() ? *unit_at : ' ';
        if (unit == 'K') bytes <<= 10;
        if (unit == 'M') bytes <<= 20;
        if (unit == 'G') bytes <<= 30;
        best_level = level;
        best = bytes;
    }
    return best;
}

}  // namespace tempered
