// Speculative sampling's acceptance (speculative/rejection_sampling.h) leaves the target's distribution
// unchanged: over many draws with the draft token taken from q, the tokens that come out follow p (a
// chi-square test), for a q far from p, for q == p (everything accepted) and for a one-hot q.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "speculative/rejection_sampling.h"

namespace tempered {
namespace {
namespace speculative_rejection_sampling_test {

// Pearson's statistic of `counts` against `expected` probabilities over `draws`.
double chi_square(const std::vector<int>& counts, const std::vector<float>& expected, int draws) {
    double statistic = 0.0;
    for (size_t i = 0; i < counts.size(); ++i) {
        const double e = expected[i] * draws;
        if (e > 0) statistic += (counts[i] - e) * (counts[i] - e) / e;
    }
    return statistic;
}

// Draws `draws` tokens through verify_draft; the counts of the tokens that come out, and how many drafts
// were accepted.
std::vector<int> run(const std::vector<float>& p, const std::vector<float>& q, int draws, int& accepted) {
    std::mt19937_64 random(12345);
    std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
    std::discrete_distribution<int32_t> from_q(q.begin(), q.end());
    std::vector<int> counts(p.size());
    accepted = 0;
    for (int i = 0; i < draws; ++i) {
        const int32_t draft = from_q(random);
        const DraftVerdict verdict = verify_draft(p, q, draft, uniform(random), uniform(random));
        EXPECT_GE(verdict.token, 0);
        if (verdict.token < 0) continue;
        ++counts[static_cast<size_t>(verdict.token)];
        accepted += verdict.accepted;
        if (verdict.accepted) {
            EXPECT_EQ(verdict.token, draft);
        }
    }
    return counts;
}

constexpr int kDraws = 200000;
// chi-square with 5 degrees of freedom: P(statistic > 20.5) = 0.001.
constexpr double kCritical = 20.5;

TEST(SpeculativeSampling, OutputFollowsTheTargetWhateverTheDraft) {
    const std::vector<float> p = {0.05f, 0.30f, 0.10f, 0.25f, 0.20f, 0.10f};
    const std::vector<float> q = {0.40f, 0.05f, 0.25f, 0.05f, 0.05f, 0.20f};
    int accepted = 0;
    const auto counts = run(p, q, kDraws, accepted);
    EXPECT_LT(chi_square(counts, p, kDraws), kCritical);
    // Acceptance rate sum_x min(p, q) = 0.05 + 0.05 + 0.10 + 0.05 + 0.05 + 0.10 = 0.40.
    EXPECT_NEAR(static_cast<double>(accepted) / kDraws, 0.40, 0.01);
}

TEST(SpeculativeSampling, AnExactDraftIsAlwaysAccepted) {
    const std::vector<float> p = {0.05f, 0.30f, 0.10f, 0.25f, 0.20f, 0.10f};
    int accepted = 0;
    const auto counts = run(p, p, kDraws, accepted);
    EXPECT_EQ(accepted, kDraws);
    EXPECT_LT(chi_square(counts, p, kDraws), kCritical);
}

TEST(SpeculativeSampling, AOneHotDraftIsKeptWithItsTargetProbability) {
    const std::vector<float> p = {0.05f, 0.30f, 0.10f, 0.25f, 0.20f, 0.10f};
    const std::vector<float> q = {0, 0, 0, 1, 0, 0};  // prompt lookup proposed token 3
    int accepted = 0;
    const auto counts = run(p, q, kDraws, accepted);
    EXPECT_NEAR(static_cast<double>(accepted) / kDraws, 0.25, 0.01);
    EXPECT_LT(chi_square(counts, p, kDraws), kCritical);
}

}  // namespace speculative_rejection_sampling_test
}  // namespace
}  // namespace tempered
