#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "sampling/next_token.h"

namespace tempered {
namespace {
namespace sampling_next_token_test {

TokenHistory masking(std::span<const int32_t> masked) {
    TokenHistory history;
    history.masked = masked;
    return history;
}

struct NextTokenTest : ::testing::Test {
    NextTokenTest() { sampling.temperature = 0.0f; }
    SampledToken draw(const std::vector<float>& logits, const TokenHistory& history, int top_logprobs = -1) {
        return next_token(logits, {sampling, penalties, top_logprobs}, history, rng, workspace);
    }
    SamplingParams sampling;
    PenaltyParams penalties;
    SamplerRng rng{7};
    NextTokenWorkspace workspace;
};

TEST_F(NextTokenTest, GreedyWithoutPenaltiesOrMasksIsTheArgmax) {
    EXPECT_EQ(draw({0.1f, 3.0f, 2.0f, 0.5f}, {}).token, 1);
}

TEST_F(NextTokenTest, MaskedTokensAreNeverDrawn) {
    const std::vector<int32_t> masked = {1, 2};
    EXPECT_EQ(draw({0.1f, 3.0f, 2.0f, 0.5f}, masking(masked)).token, 3);
    sampling.temperature = 1.0f;
    for (int i = 0; i < 50; ++i) {
        const int32_t token = draw({0.1f, 3.0f, 2.0f, 0.5f}, masking(masked)).token;
        EXPECT_TRUE(token == 0 || token == 3) << token;
    }
}

TEST_F(NextTokenTest, PenaltiesSeeThePromptAndTheOutput) {
    const std::vector<int32_t> prompt = {1};
    const std::vector<int32_t> output = {2};
    penalties.repetition = 4.0f;  // 3.0 -> 0.75 and 2.0 -> 0.5: token 3 (0.9) wins
    EXPECT_EQ(draw({0.1f, 3.0f, 2.0f, 0.9f}, TokenHistory{prompt, output, {}}).token, 3);
    penalties = {};
    penalties.frequency = 2.5f;  // over the output only
    EXPECT_EQ(draw({0.1f, 3.0f, 2.0f, 0.9f}, TokenHistory{prompt, {}, {}}).token, 1);
    EXPECT_EQ(draw({0.1f, 3.0f, 2.0f, 0.9f}, TokenHistory{{}, prompt, {}}).token, 2);  // 3.0 - 2.5 < 2.0
}

TEST_F(NextTokenTest, LogprobsComeFromTheRawLogitsAndLeaveThemUnchanged) {
    const std::vector<float> logits = {0.0f, 1.0f, 2.0f};
    const std::vector<int32_t> masked = {2};
    const SampledToken sampled = draw(logits, masking(masked), /*top_logprobs=*/1);
    EXPECT_EQ(sampled.token, 1);
    ASSERT_TRUE(sampled.logprob);
    const float log_sum = std::log(std::exp(0.0f) + std::exp(1.0f) + std::exp(2.0f));
    EXPECT_NEAR(sampled.logprob->logprob, 1.0f - log_sum, 1e-5f);
    ASSERT_EQ(sampled.logprob->top.size(), 1u);
    EXPECT_EQ(sampled.logprob->top[0].first, 2);  // the masked token is still the model's most likely
    EXPECT_EQ(logits, (std::vector<float>{0.0f, 1.0f, 2.0f}));
    EXPECT_FALSE(draw(logits, {}).logprob);
}

}  // namespace sampling_next_token_test
}  // namespace
}  // namespace tempered
