#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "sampling/sampler.h"

namespace tempered {
namespace {
namespace sampler_test {

// Draws `n` tokens and counts them.
std::map<int32_t, int> histogram(const std::vector<float>& logits, const SamplingParams& params, int n,
                                 uint64_t seed = 1) {
    SamplerRng rng(seed);
    SamplerWorkspace workspace;
    std::map<int32_t, int> counts;
    for (int i = 0; i < n; ++i) ++counts[sample_token(logits, params, rng, workspace)];
    return counts;
}

TEST(Sampler, GreedyTakesArgmaxWithLowestIdOnTies) {
    EXPECT_EQ(greedy_token(std::vector<float>{1.0f, 3.0f, 2.0f, 3.0f}), 1);
    SamplingParams greedy;
    greedy.temperature = 0.0f;
    SamplerRng rng(7);
    SamplerWorkspace workspace;
    EXPECT_EQ(sample_token(std::vector<float>{0.5f, -1.0f, 4.0f}, greedy, rng, workspace), 2);
}

TEST(Sampler, SameSeedSameTokensDifferentSeedDifferentTokens) {
    const std::vector<float> logits = {0.0f, 0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f};
    SamplingParams params;
    auto draw = [&](uint64_t seed) {
        SamplerRng rng(seed);
        SamplerWorkspace workspace;
        std::vector<int32_t> tokens;
        for (int i = 0; i < 50; ++i) tokens.push_back(sample_token(logits, params, rng, workspace));
        return tokens;
    };
    EXPECT_EQ(draw(42), draw(42));
    EXPECT_NE(draw(42), draw(43));
}

TEST(Sampler, TemperatureOneFollowsSoftmax) {
    const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
    const auto counts = histogram(logits, SamplingParams{}, 20000);
    EXPECT_NEAR(counts.at(0) / 20000.0, 0.5, 0.02);
    EXPECT_NEAR(counts.at(1) / 20000.0, 0.3, 0.02);
    EXPECT_NEAR(counts.at(2) / 20000.0, 0.2, 0.02);
}

TEST(Sampler, LowTemperatureSharpens) {
    const std::vector<float> logits = {1.0f, 0.0f};
    SamplingParams params;
    params.temperature = 0.25f;  // p(0) = 1 / (1 + e^-4) ~ 0.982
    const auto counts = histogram(logits, params, 10000);
    EXPECT_NEAR(counts.at(0) / 10000.0, 1.0 / (1.0 + std::exp(-4.0)), 0.01);
}

TEST(Sampler, TopKKeepsOnlyTheKMostLikely) {
    const std::vector<float> logits = {3.0f, 2.9f, 2.8f, 2.7f, 0.0f};
    SamplingParams params;
    params.top_k = 2;
    const auto counts = histogram(logits, params, 2000);
    EXPECT_EQ(counts.size(), 2u);
    EXPECT_TRUE(counts.count(0) && counts.count(1));
}

TEST(Sampler, TopPKeepsSmallestSetReachingTheMass) {
    // probabilities 0.5, 0.3, 0.15, 0.05: top_p 0.7 needs {0, 1}; top_p 0.85 needs {0, 1, 2}.
    const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
    SamplingParams params;
    params.top_p = 0.7f;
    EXPECT_EQ(histogram(logits, params, 2000).size(), 2u);
    params.top_p = 0.85f;
    EXPECT_EQ(histogram(logits, params, 4000).size(), 3u);
}

// A vocabulary-sized, nearly flat distribution: the nucleus spans thousands of tokens, beyond the
// sampler's first sorted prefix. Every draw must come from the nucleus a full sort defines.
TEST(Sampler, TopPOverAFlatVocabularyMatchesTheFullySortedNucleus) {
    constexpr int kVocab = 49152;
    std::vector<float> logits(kVocab);
    for (int i = 0; i < kVocab; ++i) logits[static_cast<size_t>(i)] = 0.5f * std::sin(0.37f * static_cast<float>(i));
    SamplingParams params;
    params.top_p = 0.5f;
    std::vector<std::pair<double, int32_t>> sorted;
    double total = 0.0;
    for (int i = 0; i < kVocab; ++i) {
        sorted.push_back({std::exp(static_cast<double>(logits[static_cast<size_t>(i)])), i});
        total += sorted.back().first;
    }
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<bool> in_nucleus(kVocab, false);
    double mass = 0.0, cutoff_logit = 0.0;
    for (size_t i = 0; i < sorted.size() && mass < 0.5 * total; ++i) {
        mass += sorted[i].first;
        in_nucleus[static_cast<size_t>(sorted[i].second)] = true;
        cutoff_logit = std::log(sorted[i].first);
    }
    const auto counts = histogram(logits, params, 200);
    EXPECT_GT(counts.size(), 150u);  // the draws spread over the wide nucleus
    for (const auto& [token, count] : counts) {
        // Only a token at the nucleus' edge may differ, by float rounding of the running mass.
        if (!in_nucleus[static_cast<size_t>(token)]) {
            EXPECT_NEAR(logits[static_cast<size_t>(token)], cutoff_logit, 1e-3) << token;
        }
    }
}

TEST(Sampler, MinPDropsTokensFarBelowTheBest) {
    const std::vector<float> logits = {std::log(0.6f), std::log(0.3f), std::log(0.1f)};
    SamplingParams params;
    params.min_p = 0.2f;  // threshold 0.12: token 2 (0.1) goes
    const auto counts = histogram(logits, params, 4000);
    EXPECT_EQ(counts.count(2), 0u);
    EXPECT_NEAR(counts.at(0) / 4000.0, 2.0 / 3.0, 0.03);
}

TEST(Sampler, LogitBiasAppliesBeforeGreedyAndCanBan) {
    const std::vector<float> logits = {5.0f, 1.0f, 0.0f};
    SamplingParams params;
    params.temperature = 0.0f;
    params.logit_bias = {{0, -INFINITY}, {2, 0.5f}, {99, 100.0f}};  // id 99 is out of range: ignored
    SamplerRng rng(1);
    SamplerWorkspace workspace;
    EXPECT_EQ(sample_token(logits, params, rng, workspace), 1);
    params.temperature = 1.0f;
    EXPECT_EQ(histogram(logits, params, 1000).count(0), 0u);
}

TEST(Sampler, NanLogitsAreNeverChosen) {
    const std::vector<float> logits = {NAN, 0.0f, NAN};
    const auto counts = histogram(logits, SamplingParams{}, 100);
    EXPECT_EQ(counts.size(), 1u);
    EXPECT_EQ(counts.count(1), 1u);
}

}  // namespace sampler_test
}  // namespace
}  // namespace tempered
