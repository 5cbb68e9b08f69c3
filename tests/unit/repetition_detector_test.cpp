#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "output/repetition_detector.h"

namespace tempered {
namespace {
namespace repetition_detector_test {

RepetitionDetectionParams params(int32_t min_size, int32_t max_size, int32_t min_count) {
    auto valid = validate_repetition_detection({max_size, min_size, min_count});
    EXPECT_TRUE(valid.ok()) << valid.error().field << " " << valid.error().rule;
    return *valid;
}

struct Fired {
    int64_t index = 0;  // position in the stream of the token whose observe() returned the event
    RepetitionEvent event;
};

// Feeds the whole stream; every event observe() returns, with where it was returned.
std::vector<Fired> feed(RepetitionDetector& detector, const std::vector<int32_t>& stream) {
    std::vector<Fired> fired;
    for (size_t i = 0; i < stream.size(); ++i) {
        if (auto event = detector.observe(stream[i])) fired.push_back({static_cast<int64_t>(i), *event});
    }
    return fired;
}

// `count` tokens that are all different from each other and from every token below `first`.
std::vector<int32_t> distinct_tokens(int32_t first, size_t count, std::mt19937& rng) {
    std::vector<int32_t> tokens(count);
    for (size_t i = 0; i < count; ++i) tokens[i] = first + static_cast<int32_t>(i);
    std::shuffle(tokens.begin(), tokens.end(), rng);
    return tokens;
}

void append_copies(std::vector<int32_t>& stream, const std::vector<int32_t>& block, int copies) {
    for (int c = 0; c < copies; ++c) stream.insert(stream.end(), block.begin(), block.end());
}

// The oracle, by another route (vLLM's check, applied to every prefix): the smallest period p in range
// whose last min_count blocks of the prefix are equal, for the first prefix that has one.
std::optional<Fired> brute_force_first_loop(const std::vector<int32_t>& stream, const RepetitionDetectionParams& p) {
    for (size_t end = 1; end <= stream.size(); ++end) {
        for (int32_t period = p.min_pattern_size; period <= p.max_pattern_size; ++period) {
            const size_t span = static_cast<size_t>(period) * static_cast<size_t>(p.min_count);
            if (span > end) break;
            bool equal_blocks = true;
            for (size_t i = end - span + static_cast<size_t>(period); i < end && equal_blocks; ++i) {
                equal_blocks = stream[i] == stream[i - static_cast<size_t>(period)];
            }
            if (equal_blocks)
                return Fired{static_cast<int64_t>(end - 1), {static_cast<int64_t>(end - 1), period, p.min_count}};
        }
    }
    return std::nullopt;
}

TEST(RepetitionDetector, EveryPeriodUpTo64FiresOnTheTokenThatCompletesMinCountCopies) {
    std::mt19937 rng(13);
    for (int32_t min_count : {2, 3, 5}) {
        for (int32_t period = 1; period <= 64; ++period) {
            const size_t noise_length = rng() % 200;
            std::vector<int32_t> stream = distinct_tokens(100000, noise_length, rng);
            append_copies(stream, distinct_tokens(0, static_cast<size_t>(period), rng), min_count + 3);

            RepetitionDetector detector(params(1, 64, min_count));
            const auto fired = feed(detector, stream);
            ASSERT_EQ(fired.size(), 1u) << "period " << period << " min_count " << min_count;
            const int64_t expected_at = static_cast<int64_t>(noise_length) + int64_t{min_count} * period - 1;
            EXPECT_EQ(fired[0].index, expected_at) << "period " << period;
            EXPECT_EQ(fired[0].event.detected_at_token, expected_at) << "period " << period;
            EXPECT_EQ(fired[0].event.period, period);
            EXPECT_EQ(fired[0].event.repeats, min_count);
            // The loop went on after the detection: the detector still knows how far.
            EXPECT_EQ(detector.current_repeats(period), min_count + 3);
            ASSERT_TRUE(detector.detection().has_value());
            EXPECT_EQ(detector.detection()->detected_at_token, expected_at);
        }
    }
}

TEST(RepetitionDetector, AgreesWithABruteForceScanOnRandomStreamsOverSmallAlphabets) {
    std::mt19937 rng(7);
    const RepetitionDetectionParams cases[] = {params(1, 8, 2), params(1, 16, 3), params(3, 12, 2), params(2, 64, 4),
                                               params(5, 5, 2)};
    int loops_found = 0;
    for (const auto& p : cases) {
        for (int trial = 0; trial < 200; ++trial) {
            const int32_t alphabet = 2 + static_cast<int32_t>(rng() % 4);
            std::vector<int32_t> stream(300);
            for (auto& token : stream) token = static_cast<int32_t>(rng() % static_cast<uint32_t>(alphabet));

            RepetitionDetector detector(p);
            const auto fired = feed(detector, stream);
            const auto expected = brute_force_first_loop(stream, p);
            ASSERT_EQ(fired.empty(), !expected.has_value()) << "trial " << trial;
            if (!expected) continue;
            ++loops_found;
            EXPECT_EQ(fired[0].index, expected->index) << "trial " << trial;
            EXPECT_EQ(fired[0].event.detected_at_token, expected->event.detected_at_token);
            EXPECT_EQ(fired[0].event.period, expected->event.period) << "trial " << trial;
            EXPECT_EQ(fired[0].event.repeats, p.min_count);
        }
    }
    EXPECT_GT(loops_found, 500);  // small alphabets loop often: the comparison was not vacuous
}

TEST(RepetitionDetector, ReportsTheSmallestPeriodWhenItsMultiplesAlsoRepeat) {
    // "a b" repeated is also "a b a b" repeated; the loop is period 2.
    RepetitionDetector detector(params(1, 64, 3));
    std::vector<int32_t> stream = {9, 8, 7};
    append_copies(stream, {1, 2}, 40);
    const auto fired = feed(detector, stream);
    ASSERT_EQ(fired.size(), 1u);
    EXPECT_EQ(fired[0].event.period, 2);
    EXPECT_EQ(fired[0].event.detected_at_token, 3 + 3 * 2 - 1);
    // By then (and later) the multiples repeat too, but fewer whole times.
    EXPECT_EQ(detector.current_repeats(2), 40);
    EXPECT_EQ(detector.current_repeats(4), 20);
    EXPECT_EQ(detector.current_repeats(6), 13);
}

TEST(RepetitionDetector, MinPatternSizeSkipsShortPeriodsAndFindsTheirSmallestMultipleInRange) {
    // With periods below 3 out of range, "a b" repeated is seen as the 4-token block "a b a b".
    RepetitionDetector detector(params(3, 64, 3));
    std::vector<int32_t> stream = {9, 8, 7};
    append_copies(stream, {1, 2}, 40);
    const auto fired = feed(detector, stream);
    ASSERT_EQ(fired.size(), 1u);
    EXPECT_EQ(fired[0].event.period, 4);
    EXPECT_EQ(fired[0].event.detected_at_token, 3 + 3 * 4 - 1);

    // A single token 100 times is period 3 too, but 40 copies of a 3-token block need 120 tokens.
    RepetitionDetector narrow(params(3, 3, 40));
    EXPECT_TRUE(feed(narrow, std::vector<int32_t>(100, 5)).empty());
}

TEST(RepetitionDetector, OneTokenChangedInEveryBlockNeverFires) {
    std::mt19937 rng(21);
    for (int32_t min_count : {2, 3}) {
        for (int32_t period = 2; period <= 64; ++period) {
            const auto block = distinct_tokens(0, static_cast<size_t>(period), rng);
            std::vector<int32_t> stream = distinct_tokens(100000, 50, rng);
            int32_t fresh = 200000;
            for (int32_t copy = 0; copy < 3 * min_count + 4; ++copy) {
                auto altered = block;
                altered[static_cast<size_t>(copy % period)] = fresh++;  // a different token in every block
                append_copies(stream, altered, 1);
            }
            RepetitionDetector detector(params(1, 64, min_count));
            EXPECT_TRUE(feed(detector, stream).empty()) << "period " << period << " min_count " << min_count;
        }
    }
}

TEST(RepetitionDetector, OneCopyShortOfMinCountNeverFires) {
    std::mt19937 rng(5);
    for (int32_t period = 1; period <= 64; ++period) {
        const auto block = distinct_tokens(0, static_cast<size_t>(period), rng);
        std::vector<int32_t> stream = distinct_tokens(100000, 30, rng);
        append_copies(stream, block, 3);                              // min_count - 1 whole copies ...
        stream.insert(stream.end(), block.begin(), block.end() - 1);  // ... and all but the last token
        stream.push_back(99999);                                      // which is wrong: the fourth copy never completes
        append_copies(stream, block, 3);  // the loop starts over and again falls one copy short

        RepetitionDetector detector(params(1, 64, 4));
        EXPECT_TRUE(feed(detector, stream).empty()) << "period " << period;
        // One more copy after the restart completes min_count, on its last token and not before.
        const auto completing = feed(detector, block);
        ASSERT_EQ(completing.size(), 1u) << "period " << period;
        EXPECT_EQ(completing[0].index, period - 1);
        EXPECT_EQ(completing[0].event.period, period);
        EXPECT_EQ(completing[0].event.detected_at_token, static_cast<int64_t>(stream.size()) + period - 1);
    }
}

TEST(RepetitionDetector, FiresOnceAndKeepsTheFirstDetection) {
    RepetitionDetector detector(params(1, 8, 2));
    const auto fired = feed(detector, {1, 1, 1, 1, 5, 6, 5, 6, 5, 6});
    ASSERT_EQ(fired.size(), 1u);
    EXPECT_EQ(fired[0].event.period, 1);
    EXPECT_EQ(fired[0].event.detected_at_token, 1);
    EXPECT_EQ(detector.detection()->period, 1);
    EXPECT_EQ(detector.current_repeats(2), 3);  // the later loop is still followed
    EXPECT_EQ(detector.tokens_observed(), 10);
}

TEST(RepetitionDetector, ResetForgetsTokensAndDetection) {
    RepetitionDetector detector(params(1, 8, 3));
    const std::vector<int32_t> loop = {4, 2, 4, 2, 4, 2};
    ASSERT_EQ(feed(detector, loop).size(), 1u);
    detector.reset();
    EXPECT_FALSE(detector.detection().has_value());
    EXPECT_EQ(detector.tokens_observed(), 0);
    EXPECT_EQ(detector.current_repeats(2), 0);

    // Two copies before the reset and one after are not three in a row.
    ASSERT_TRUE(feed(detector, {4, 2, 4, 2}).empty());
    detector.reset();
    EXPECT_TRUE(feed(detector, {4, 2}).empty());

    // And a fresh sequence detects exactly as a new detector does.
    detector.reset();
    const auto again = feed(detector, loop);
    ASSERT_EQ(again.size(), 1u);
    EXPECT_EQ(again[0].event.detected_at_token, 5);
    EXPECT_EQ(again[0].event.period, 2);
}

TEST(RepetitionDetector, PeriodsBeyond64UpToTheLimit) {
    std::mt19937 rng(3);
    for (int32_t period : {65, 200, kMaxRepetitionPatternSize}) {
        std::vector<int32_t> stream = distinct_tokens(100000, 17, rng);
        append_copies(stream, distinct_tokens(0, static_cast<size_t>(period), rng), 3);
        RepetitionDetector detector(params(1, kMaxRepetitionPatternSize, 2));
        const auto fired = feed(detector, stream);
        ASSERT_EQ(fired.size(), 1u);
        EXPECT_EQ(fired[0].event.period, period);
        EXPECT_EQ(fired[0].event.detected_at_token, 17 + 2 * period - 1);
    }
}

TEST(RepetitionDetector, DisabledParamsNeverFire) {
    RepetitionDetector off(RepetitionDetectionParams{});
    EXPECT_TRUE(feed(off, std::vector<int32_t>(500, 3)).empty());
    EXPECT_EQ(off.tokens_observed(), 500);
    EXPECT_EQ(off.current_repeats(1), 0);
}

TEST(RepetitionDetectionParams, ValidationFollowsVllmAndNamesTheField) {
    auto defaulted = validate_repetition_detection({8, 0, 3});
    ASSERT_TRUE(defaulted.ok());
    EXPECT_EQ(defaulted->min_pattern_size, 1);
    EXPECT_TRUE(validate_repetition_detection({0, 0, 0}).ok());  // off

    const auto field_at_fault = [](RepetitionDetectionParams p) {
        auto result = validate_repetition_detection(p);
        return result.ok() ? std::string("ok") : result.error().field;
    };
    EXPECT_EQ(field_at_fault({-1, 0, 3}), "max_pattern_size");
    EXPECT_EQ(field_at_fault({8, -1, 3}), "min_pattern_size");
    EXPECT_EQ(field_at_fault({4, 5, 3}), "min_pattern_size");
    EXPECT_EQ(field_at_fault({8, 1, 1}), "min_count");
    EXPECT_EQ(field_at_fault({kMaxRepetitionPatternSize + 1, 1, 2}), "max_pattern_size");
    EXPECT_EQ(field_at_fault({0, 0, 1}), "ok");  // off: min_count is not looked at, as in vLLM
}

// --- min_loop_tokens: the loop must also cover that many tokens ---

RepetitionDetectionParams params_with_length(int32_t min_size, int32_t max_size, int32_t min_count, int32_t tokens) {
    RepetitionDetectionParams p = params(min_size, max_size, min_count);
    p.min_loop_tokens = tokens;
    return p;
}

// The oracle for a minimum length: the first prefix whose periodic suffix, for the smallest period p in range,
// is at least max(min_count * p, min_loop_tokens) long; its whole copies are that length / p.
std::optional<Fired> brute_force_first_long_loop(const std::vector<int32_t>& stream,
                                                 const RepetitionDetectionParams& p) {
    for (size_t end = 1; end <= stream.size(); ++end) {
        for (int32_t period = p.min_pattern_size; period <= p.max_pattern_size; ++period) {
            const auto lag = static_cast<size_t>(period);
            if (lag > end) break;
            size_t periodic = lag;  // the suffix in which every token equals the one `period` before it
            while (periodic < end && stream[end - 1 - (periodic - lag)] == stream[end - 1 - periodic]) ++periodic;
            const size_t needed =
                std::max<size_t>(lag * static_cast<size_t>(p.min_count), static_cast<size_t>(p.min_loop_tokens));
            if (periodic >= needed) {
                const auto index = static_cast<int64_t>(end - 1);
                return Fired{index, {index, period, static_cast<int32_t>(periodic / lag)}};
            }
        }
    }
    return std::nullopt;
}

TEST(RepetitionDetector, MinLoopTokensAgreesWithABruteForceScan) {
    std::mt19937 rng(11);
    const RepetitionDetectionParams cases[] = {params_with_length(1, 8, 2, 12), params_with_length(1, 16, 3, 20),
                                               params_with_length(2, 12, 2, 9), params_with_length(1, 64, 3, 40)};
    int loops_found = 0;
    for (const auto& p : cases) {
        for (int trial = 0; trial < 200; ++trial) {
            const int32_t alphabet = 2 + static_cast<int32_t>(rng() % 3);
            std::vector<int32_t> stream(300);
            for (auto& token : stream) token = static_cast<int32_t>(rng() % static_cast<uint32_t>(alphabet));
            RepetitionDetector detector(p);
            const auto fired = feed(detector, stream);
            const auto expected = brute_force_first_long_loop(stream, p);
            ASSERT_EQ(fired.empty(), !expected.has_value()) << "trial " << trial;
            if (!expected) continue;
            ++loops_found;
            EXPECT_EQ(fired[0].index, expected->index) << "trial " << trial;
            EXPECT_EQ(fired[0].event.period, expected->event.period) << "trial " << trial;
            EXPECT_EQ(fired[0].event.repeats, expected->event.repeats) << "trial " << trial;
        }
    }
    EXPECT_GT(loops_found, 200);
}

TEST(RepetitionDetector, MinLoopTokensHoldsShortPeriodsBackAndLeavesLongOnesToMinCount) {
    const RepetitionDetectionParams p = params_with_length(1, 64, 3, 20);
    {
        RepetitionDetector detector(p);  // one token over and over: the 20th fires, not the 3rd
        const auto fired = feed(detector, std::vector<int32_t>(30, 5));
        ASSERT_EQ(fired.size(), 1u);
        EXPECT_EQ(fired[0].index, 19);
        EXPECT_EQ(fired[0].event.period, 1);
        EXPECT_EQ(fired[0].event.repeats, 20);
    }
    {
        RepetitionDetector detector(p);  // a 4-token phrase: its 5th copy
        std::vector<int32_t> stream;
        for (int copy = 0; copy < 8; ++copy)
            for (int32_t token : {1, 2, 3, 4}) stream.push_back(token);
        const auto fired = feed(detector, stream);
        ASSERT_EQ(fired.size(), 1u);
        EXPECT_EQ(fired[0].index, 19);
        EXPECT_EQ(fired[0].event.period, 4);
        EXPECT_EQ(fired[0].event.repeats, 5);
    }
    {
        RepetitionDetector detector(p);  // a 10-token sentence: min_count's 3rd copy already covers 30 tokens
        std::vector<int32_t> stream;
        for (int copy = 0; copy < 4; ++copy)
            for (int32_t token = 10; token < 20; ++token) stream.push_back(token);
        const auto fired = feed(detector, stream);
        ASSERT_EQ(fired.size(), 1u);
        EXPECT_EQ(fired[0].index, 29);
        EXPECT_EQ(fired[0].event.repeats, 3);
    }
    RepetitionDetectionParams negative = p;
    negative.min_loop_tokens = -1;
    auto invalid = validate_repetition_detection(negative);
    ASSERT_FALSE(invalid.ok());
    EXPECT_EQ(invalid.error().field, "min_loop_tokens");
}

TEST(RepetitionDetector, HugeMinCountIsUnreachableRatherThanWrapping) {
    RepetitionDetector detector(params(1, 64, 2'000'000'000));
    EXPECT_TRUE(feed(detector, std::vector<int32_t>(1000, 1)).empty());
    EXPECT_EQ(detector.current_repeats(1), 1000);
}

}  // namespace repetition_detector_test
}  // namespace
}  // namespace tempered
