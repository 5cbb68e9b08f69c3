// The allowed-token mask (a grammar's) inside the draw: the distribution drawn from is the masked one,
// renormalised; truncation counts allowed tokens only; the mask comes after the logit bias.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "sampling/next_token.h"
#include "sampling/sampler.h"

namespace tempered {
namespace {
namespace sampling_allowed_tokens_test {

std::vector<uint64_t> allowing(size_t vocab, const std::set<int32_t>& tokens) {
    std::vector<uint64_t> bits((vocab + 63) / 64, 0);
    for (int32_t t : tokens) bits[static_cast<size_t>(t) >> 6] |= uint64_t{1} << (t & 63);
    return bits;
}

// The reference: the same logits with every disallowed token's logit at -inf.
std::vector<float> minus_infinity_outside(std::vector<float> logits, const std::set<int32_t>& tokens) {
    for (size_t t = 0; t < logits.size(); ++t)
        if (!tokens.count(static_cast<int32_t>(t))) logits[t] = -std::numeric_limits<float>::infinity();
    return logits;
}

std::vector<float> random_logits(size_t vocab, uint64_t seed) {
    std::mt19937_64 generator(seed);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    std::vector<float> logits(vocab);
    for (float& l : logits) l = normal(generator);
    return logits;
}

std::set<int32_t> random_subset(size_t vocab, uint64_t seed) {
    std::mt19937_64 generator(seed);
    std::set<int32_t> tokens;
    for (size_t t = 0; t < vocab; ++t)
        if (generator() % 3 == 0) tokens.insert(static_cast<int32_t>(t));
    tokens.insert(static_cast<int32_t>(generator() % vocab));  // never empty
    return tokens;
}

TEST(AllowedTokens, TheDrawEqualsTheDrawFromTheRenormalisedMaskedLogitsForEverySeedAndSetting) {
    constexpr size_t kVocab = 300;  // not a multiple of 64: the last word is partial
    std::vector<SamplingParams> settings(5);
    settings[1].temperature = 0.7f;
    settings[2].top_k = 5;
    settings[3].top_p = 0.6f;
    settings[4].min_p = 0.2f;
    settings[4].temperature = 1.3f;
    for (uint64_t seed = 0; seed < 40; ++seed) {
        const auto logits = random_logits(kVocab, seed);
        const auto tokens = random_subset(kVocab, seed + 1000);
        const auto bits = allowing(kVocab, tokens);
        const auto reference_logits = minus_infinity_outside(logits, tokens);
        for (const SamplingParams& params : settings) {
            SamplerRng masked_rng(seed), reference_rng(seed);
            SamplerWorkspace a, b;
            for (int draw = 0; draw < 20; ++draw) {
                const int32_t masked = sample_token(logits, params, masked_rng, a, bits);
                const int32_t reference = sample_token(reference_logits, params, reference_rng, b);
                ASSERT_EQ(masked, reference) << "seed " << seed << " draw " << draw;
                ASSERT_TRUE(tokens.count(masked));
            }
        }
    }
}

TEST(AllowedTokens, FrequenciesFollowTheSoftmaxOverTheAllowedTokensOnly) {
    // p over {0, 2, 3} renormalised: 0.2 / 0.5, 0.2 / 0.5, 0.1 / 0.5.
    const std::vector<float> logits = {std::log(0.2f), std::log(0.5f), std::log(0.2f), std::log(0.1f)};
    const auto bits = allowing(4, {0, 2, 3});
    SamplerRng rng(11);
    SamplerWorkspace workspace;
    std::map<int32_t, int> counts;
    constexpr int kDraws = 20000;
    for (int i = 0; i < kDraws; ++i) ++counts[sample_token(logits, SamplingParams{}, rng, workspace, bits)];
    EXPECT_EQ(counts.count(1), 0u);
    EXPECT_NEAR(counts[0] / double(kDraws), 0.4, 0.02);
    EXPECT_NEAR(counts[2] / double(kDraws), 0.4, 0.02);
    EXPECT_NEAR(counts[3] / double(kDraws), 0.2, 0.02);
}

TEST(AllowedTokens, TopKCountsOnlyAllowedTokens) {
    // The three most likely tokens are disallowed; top_k 2 keeps the two best allowed ones, 3 and 4.
    const std::vector<float> logits = {9.0f, 8.0f, 7.0f, 1.0f, 0.9f, 0.1f, 0.0f};
    const auto bits = allowing(7, {3, 4, 5, 6});
    SamplingParams params;
    params.top_k = 2;
    SamplerRng rng(3);
    SamplerWorkspace workspace;
    std::set<int32_t> seen;
    for (int i = 0; i < 400; ++i) seen.insert(sample_token(logits, params, rng, workspace, bits));
    EXPECT_EQ(seen, (std::set<int32_t>{3, 4}));
}

TEST(AllowedTokens, TopPAndMinPMeasureAgainstTheAllowedTokens) {
    // Allowed {2, 3, 4}, weights 0.7, 0.2, 0.1 after renormalising: top_p 0.6 keeps token 2 alone,
    // although unmasked token 0 holds most of the mass.
    const std::vector<float> logits = {std::log(0.9f), std::log(0.05f), std::log(0.035f), std::log(0.01f),
                                       std::log(0.005f)};
    const auto bits = allowing(5, {2, 3, 4});
    SamplerRng rng(5);
    SamplerWorkspace workspace;
    SamplingParams top_p;
    top_p.top_p = 0.6f;
    for (int i = 0; i < 200; ++i) EXPECT_EQ(sample_token(logits, top_p, rng, workspace, bits), 2);
    // min_p 0.25 of the best allowed (0.035): keeps 2 (1.0) and 3 (0.29), drops 4 (0.14).
    SamplingParams min_p;
    min_p.min_p = 0.25f;
    std::set<int32_t> seen;
    for (int i = 0; i < 400; ++i) seen.insert(sample_token(logits, min_p, rng, workspace, bits));
    EXPECT_EQ(seen, (std::set<int32_t>{2, 3}));
}

TEST(AllowedTokens, TheMaskComesAfterTheLogitBias) {
    const std::vector<float> logits = {0.0f, 1.0f, 2.0f};
    const auto bits = allowing(3, {0, 1});
    SamplingParams params;
    params.temperature = 0.0f;
    params.logit_bias = {{2, 100.0f}, {0, 5.0f}};  // a bias cannot bring back a masked token
    SamplerRng rng(1);
    SamplerWorkspace workspace;
    EXPECT_EQ(sample_token(logits, params, rng, workspace, bits), 0);
}

TEST(AllowedTokens, NextTokenMasksButReportsLogprobsFromTheRawLogits) {
    const std::vector<float> logits = {std::log(0.6f), std::log(0.3f), std::log(0.1f)};
    const auto bits = allowing(3, {2});
    SamplingParams sampling;
    PenaltyParams penalties;
    SamplerRng rng(1);
    NextTokenWorkspace workspace;
    const SampledToken drawn = next_token(logits, {sampling, penalties, 1}, TokenHistory{}, rng, workspace, bits);
    EXPECT_EQ(drawn.token, 2);  // forced: the only allowed token
    ASSERT_TRUE(drawn.logprob);
    EXPECT_NEAR(drawn.logprob->logprob, std::log(0.1f), 1e-4);  // what it was, not 0
}

}  // namespace sampling_allowed_tokens_test
}  // namespace
}  // namespace tempered
