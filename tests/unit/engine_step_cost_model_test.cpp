// The step cost fit (engine/step_cost_model.h): exact on linear data, silent until step sizes differ,
// following a change of load, never negative.
#include <gtest/gtest.h>

#include "engine/step_cost_model.h"

namespace tempered {
namespace {
namespace engine_step_cost_model_test {

TEST(StepCostModel, RecoversTheFixedAndPerTokenParts) {
    StepCostModel model;
    for (int i = 0; i < 40; ++i) {
        const int64_t tokens = 1 + i % 5;
        model.observe(tokens, 0.010 + 0.0005 * static_cast<double>(tokens));
    }
    const auto fit = model.fit();
    ASSERT_TRUE(fit.has_value());
    EXPECT_NEAR(fit->fixed_seconds, 0.010, 1e-9);
    EXPECT_NEAR(fit->per_token_seconds, 0.0005, 1e-9);
}

TEST(StepCostModel, NoFitWhileEveryStepHasTheSameSize) {
    StepCostModel model;
    for (int i = 0; i < 20; ++i) model.observe(8, 0.02 + 0.001 * (i % 2));
    EXPECT_FALSE(model.fit().has_value());
}

TEST(StepCostModel, KeepsTheLastFitThroughARunOfSameSizedSteps) {
    StepCostModel model;
    for (int i = 0; i < 40; ++i) model.observe(1 + i % 4, 0.01 + 0.001 * (1 + i % 4));
    const auto before = model.fit();
    ASSERT_TRUE(before.has_value());
    for (int i = 0; i < 500; ++i) model.observe(3, 0.013);  // consistent with the fit: nothing to learn
    const auto after = model.fit();
    ASSERT_TRUE(after.has_value());
    EXPECT_NEAR(after->per_token_seconds, before->per_token_seconds, 1e-6);
}

TEST(StepCostModel, FollowsTheLoadWhenItChanges) {
    StepCostModel model;
    for (int i = 0; i < 100; ++i) model.observe(1 + i % 5, 0.010 + 0.0001 * (1 + i % 5));
    for (int i = 0; i < 300; ++i) model.observe(1 + i % 5, 0.020 + 0.004 * (1 + i % 5));  // compute-bound now
    const auto fit = model.fit();
    ASSERT_TRUE(fit.has_value());
    EXPECT_NEAR(fit->per_token_seconds, 0.004, 1e-4);
    EXPECT_NEAR(fit->fixed_seconds, 0.020, 1e-3);
}

TEST(StepCostModel, ClampsNoiseThatSlopesDownwardsToZero) {
    StepCostModel model;
    for (int i = 0; i < 40; ++i) model.observe(1 + i % 4, 0.02 - 0.001 * (1 + i % 4));
    const auto fit = model.fit();
    ASSERT_TRUE(fit.has_value());
    EXPECT_EQ(fit->per_token_seconds, 0.0);
    EXPECT_GT(fit->fixed_seconds, 0.0);
}

}  // namespace engine_step_cost_model_test
}  // namespace
}  // namespace tempered
