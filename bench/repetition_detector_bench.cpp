// Cost per token of RepetitionDetector::observe (src/output/repetition_detector.h), the check every
// sequence pays on every decode step. A measurement, never a test: it prints ns/token and asserts nothing.
// Built by CMake as tempered_repetition_detector_bench; run `build/tempered_repetition_detector_bench`.
//
// Two streams per max_pattern_size: random tokens from a 50k vocabulary (no loop: the steady-state cost)
// and a loop (the detector fires once, then keeps following it). Many detectors are fed round-robin, as a
// batch of sequences is, so each one's state is not always hot in L1.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "output/repetition_detector.h"

using namespace tempered;

namespace {

std::vector<int32_t> random_stream(size_t length, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<int32_t> tokens(length);
    for (auto& token : tokens) token = static_cast<int32_t>(rng() % 50000);
    return tokens;
}

std::vector<int32_t> looping_stream(size_t length, int32_t period) {
    std::vector<int32_t> tokens(length);
    for (size_t i = 0; i < length; ++i) tokens[i] = static_cast<int32_t>(i % static_cast<size_t>(period)) + 7;
    return tokens;
}

// Nanoseconds per observe(), best of five passes over `stream` fed to `sequences` detectors in turn.
double ns_per_token(const RepetitionDetectionParams& params, const std::vector<int32_t>& stream, size_t sequences) {
    double best = 1e30;
    int64_t detections = 0;
    for (int pass = 0; pass < 5; ++pass) {
        std::vector<RepetitionDetector> detectors(sequences, RepetitionDetector(params));
        const auto start = std::chrono::steady_clock::now();
        for (size_t i = 0; i < stream.size(); ++i) {
            if (detectors[i % sequences].observe(stream[i])) ++detections;
        }
        const std::chrono::duration<double, std::nano> elapsed = std::chrono::steady_clock::now() - start;
        best = std::min(best, elapsed.count() / static_cast<double>(stream.size()));
    }
    if (detections < 0) std::printf("unreachable\n");  // keeps the calls observable to the optimiser
    return best;
}

}  // namespace

int main() {
    constexpr size_t kTokens = 2'000'000;
    const auto noise = random_stream(kTokens, 1);
    std::printf("%-18s %-10s %14s %14s\n", "max_pattern_size", "sequences", "random ns/tok", "loop ns/tok");
    for (int32_t max_pattern : {8, 64, 256, 1024}) {
        const RepetitionDetectionParams params{max_pattern, 1, 3};
        for (size_t sequences : {size_t{1}, size_t{64}}) {
            // A period-5 loop per sequence: the round-robin interleaving keeps each sequence's own stream periodic.
            const auto loop = looping_stream(kTokens, 5 * static_cast<int32_t>(sequences));
            std::printf("%-18d %-10zu %14.2f %14.2f\n", max_pattern, sequences, ns_per_token(params, noise, sequences),
                        ns_per_token(params, loop, sequences));
        }
    }
    return 0;
}
