#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "sampling/logprobs.h"
#include "sampling/penalties.h"

namespace tempered {
namespace {
namespace sampling_penalties_test {

TEST(Penalties, RepetitionDividesPositiveAndMultipliesNegativeLogits) {
    std::vector<float> logits = {2.0f, -2.0f, 1.0f, 1.0f};
    const std::vector<int32_t> prompt = {0}, output = {1};
    apply_penalties(logits, {2.0f, 0.0f, 0.0f}, prompt, output);
    EXPECT_FLOAT_EQ(logits[0], 1.0f);
    EXPECT_FLOAT_EQ(logits[1], -4.0f);
    EXPECT_FLOAT_EQ(logits[2], 1.0f);
}

TEST(Penalties, PresenceAndFrequencyCountOutputOnly) {
    std::vector<float> logits = {0.0f, 0.0f, 0.0f};
    const std::vector<int32_t> prompt = {2, 2}, output = {0, 0, 0, 1};
    apply_penalties(logits, {1.0f, 0.5f, 0.25f}, prompt, output);
    EXPECT_FLOAT_EQ(logits[0], -(0.5f + 0.75f));
    EXPECT_FLOAT_EQ(logits[1], -(0.5f + 0.25f));
    EXPECT_FLOAT_EQ(logits[2], 0.0f);
}

TEST(Logprobs, MatchLogSoftmaxAndRankTopTokens) {
    const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f};
    double sum = 0;
    for (float l : logits) sum += std::exp(l);
    auto result = token_logprob(logits, 2, 3);
    EXPECT_NEAR(result.logprob, 2.0 - std::log(sum), 1e-5);
    ASSERT_EQ(result.top.size(), 3u);
    EXPECT_EQ(result.top[0].first, 1);  // tie at 3.0: lower id first
    EXPECT_EQ(result.top[1].first, 3);
    EXPECT_EQ(result.top[2].first, 2);
}

}  // namespace sampling_penalties_test
}  // namespace
}  // namespace tempered
