// How many drafts are worth verifying (speculative/draft_policy.h): against the throughput each choice
// gives under the cost model the rule comes from, computed directly.
#include <gtest/gtest.h>

#include <cmath>

#include "speculative/draft_policy.h"

namespace tempered {
namespace {
namespace speculative_draft_policy_test {

// Tokens per second of a decode step of `batch` sequences where one of them verifies `drafts` drafts kept
// each with probability `rate` (in a row), each costing `draft` to make:
// (batch + sum rate^i) / (fixed + per_token * (batch + drafts) + draft * drafts).
double throughput(double fixed, double per_token, int64_t batch, double rate, int64_t drafts, double draft) {
    double expected = 0, p = 1;
    for (int64_t i = 0; i < drafts; ++i) expected += (p *= rate);
    return (static_cast<double>(batch) + expected) /
           (fixed + per_token * static_cast<double>(batch + drafts) + draft * static_cast<double>(drafts));
}

TEST(DraftPolicy, ChoosesTheCountThatMaximisesThroughput) {
    for (const double fixed : {0.005, 0.02})
        for (const double per_token : {0.00002, 0.0003, 0.002})
            for (const int64_t batch : {1, 4, 32})
                for (const double rate : {0.2, 0.5, 0.8, 0.95})
                    for (const double draft : {0.0, 0.001, 0.004}) {
                        const int64_t chosen = drafts_worth_verifying(rate, {fixed, per_token, batch, draft}, 8);
                        int64_t best = 0;
                        for (int64_t d = 1; d <= 8; ++d)
                            if (throughput(fixed, per_token, batch, rate, d, draft) >
                                throughput(fixed, per_token, batch, rate, best, draft))
                                best = d;
                        EXPECT_EQ(chosen, best) << "fixed " << fixed << " per_token " << per_token << " batch " << batch
                                                << " rate " << rate << " draft " << draft;
                    }
}

TEST(DraftPolicy, BatchOneOnAMemoryBoundStepVerifiesEverything) {
    EXPECT_EQ(drafts_worth_verifying(0.5, {0.010, 0.00002, 1}, 4), 4);
}

TEST(DraftPolicy, ALargeComputeBoundBatchVerifiesOnlyAlmostCertainDrafts) {
    const DecodeStep step{0.010, 0.002, 32};  // 0.064 of the step's 0.074 s grows with its tokens
    EXPECT_EQ(drafts_worth_verifying(0.6, step, 4), 0);
    EXPECT_EQ(drafts_worth_verifying(0.99, step, 4), 4);
}

// A draft model as slow as the target's step: a draft kept 60 % of the time is not worth its making.
TEST(DraftPolicy, ADraftAsCostlyAsTheStepItSavesIsNotMade) {
    EXPECT_EQ(drafts_worth_verifying(0.6, {0.010, 0.00002, 1, 0.0}, 4), 4);
    EXPECT_EQ(drafts_worth_verifying(0.6, {0.010, 0.00002, 1, 0.010}, 4), 0);
    EXPECT_EQ(drafts_worth_verifying(0.95, {0.010, 0.00002, 1, 0.002}, 4), 4) << "a cheap draft model that is right";
}

TEST(DraftPolicy, NoCostMeasuredMeansEveryDraft) { EXPECT_EQ(drafts_worth_verifying(0.1, DecodeStep{0, 0, 3}, 4), 4); }

TEST(AcceptanceRate, FallsWhenDraftsFailAndDriftsBackWhenIdle) {
    AcceptanceRate acceptance;
    for (int i = 0; i < 10; ++i) acceptance.observe(4, 0);
    EXPECT_LT(acceptance.rate(), 0.1);
    for (int i = 0; i < 200; ++i) acceptance.idle();
    EXPECT_NEAR(acceptance.rate(), AcceptanceRate::kPrior, 1e-3);
    for (int i = 0; i < 10; ++i) acceptance.observe(4, 4);
    EXPECT_GT(acceptance.rate(), 0.95);
}

TEST(AcceptanceRate, PositionsAfterARejectionSayNothing) {
    AcceptanceRate one_then_miss, one_then_miss_of_more;
    one_then_miss.observe(2, 1);
    one_then_miss_of_more.observe(8, 1);
    EXPECT_DOUBLE_EQ(one_then_miss.rate(), one_then_miss_of_more.rate());
}

}  // namespace speculative_draft_policy_test
}  // namespace
}  // namespace tempered
