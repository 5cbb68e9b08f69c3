// Cost per token of RepetitionDetector::observe (src/output/repetition_detector.h), the check every
// sequence pays on every decode step. A measurement, never a test: it prints ns/token and asserts nothing.
// Built by CMake as tempered_repetition_detector_bench; run `build/tempered_repetition_detector_bench`.
//
// Two streams per max_pattern_size: random tokens from a 50k vocabulary (no loop: the steady-state cost)
// and a loop (the detector fires once, then keeps following it). Many detectors are fed round-robin, as a
// batch of sequences is, so each one's state is not always hot in L1.
// Then the whole watch the server's guard runs per sequence (output/loop_watch.h): the tokens channel alone,
// with the numbers channel (shapes on, the default), and with the nesting channel too (under a grammar), over
// a synthetic 50k vocabulary whose tokens are words, numbers and JSON punctuation.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "output/loop_watch.h"
#include "output/repetition_detector.h"
#include "output/token_shapes.h"

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

// 50k token texts: mostly words, one in ten a number (with and without a space), some JSON punctuation.
std::shared_ptr<const TokenShapes> synthetic_shapes() {
    const std::vector<std::string> punctuation = {"{\"", "\":", " \"", "\",", "[", "]", "}", "},", " {", "\n  "};
    std::vector<std::string> texts;
    for (int32_t id = 0; id < 50000; ++id) {
        if (id % 10 == 0)
            texts.push_back((id % 20 ? " " : "") + std::to_string(id % 1000));
        else if (id % 10 == 1)
            texts.push_back(punctuation[static_cast<size_t>(id / 10) % punctuation.size()]);
        else
            texts.push_back(" word" + std::to_string(id));
    }
    return std::make_shared<const TokenShapes>(texts);
}

// Nanoseconds per LoopWatch::observe, best of five, `sequences` watches fed in turn.
double watch_ns_per_token(const RepetitionDetectionParams& params, const std::shared_ptr<const TokenShapes>& shapes,
                          bool structured, const std::vector<int32_t>& stream, size_t sequences) {
    double best = 1e30;
    int64_t loops = 0;
    for (int pass = 0; pass < 5; ++pass) {
        std::vector<LoopWatch> watches(sequences, LoopWatch(params, shapes, structured));
        const auto start = std::chrono::steady_clock::now();
        for (size_t i = 0; i < stream.size(); ++i) {
            if (watches[i % sequences].observe(stream[i]) != LoopWatch::Seen::Nothing) ++loops;
        }
        const std::chrono::duration<double, std::nano> elapsed = std::chrono::steady_clock::now() - start;
        best = std::min(best, elapsed.count() / static_cast<double>(stream.size()));
    }
    if (loops < 0) std::printf("unreachable\n");
    return best;
}

void watch_rows(const std::vector<int32_t>& noise) {
    const auto shapes = synthetic_shapes();
    std::printf("\nLoopWatch (min_count 3, min_loop_tokens 24), 64 sequences, random tokens, ns/token\n");
    std::printf("%-18s %10s %12s %14s\n", "max_pattern_size", "tokens", "+ numbers", "+ nesting");
    for (int32_t max_pattern : {64, 128, 256}) {
        RepetitionDetectionParams params{max_pattern, 1, 3, 24};
        const double tokens_only = watch_ns_per_token(params, shapes, false, noise, 64);
        params.shapes = true;
        std::printf("%-18d %10.2f %12.2f %14.2f\n", max_pattern, tokens_only,
                    watch_ns_per_token(params, shapes, false, noise, 64),
                    watch_ns_per_token(params, shapes, true, noise, 64));
    }
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
    watch_rows(noise);
    return 0;
}
