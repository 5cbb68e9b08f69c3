// typical_p (locally typical sampling) against independent references: a distribution worked by hand, and
// kept sets that NumPy computed in float64 from random logits (the script is in the comment below); then
// its place in the fixed order (after top-k, before top-p) and that 1 changes nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "sampling/sampler.h"

namespace tempered {
namespace {
namespace sampler_typical_test {

using Candidate = SamplerWorkspace::Candidate;

// Weights exp(logit - max), as sample_token gives the stage at temperature 1.
std::vector<Candidate> candidates_of(const std::vector<float>& logits) {
    const float best = *std::max_element(logits.begin(), logits.end());
    std::vector<Candidate> candidates;
    for (size_t i = 0; i < logits.size(); ++i)
        candidates.push_back({static_cast<int32_t>(i), std::exp(logits[i] - best)});
    return candidates;
}

std::vector<int32_t> kept(const std::vector<float>& logits, float typical_p) {
    std::vector<Candidate> candidates = candidates_of(logits);
    keep_typical(candidates, typical_p);
    std::vector<int32_t> tokens;
    for (const Candidate& c : candidates) tokens.push_back(c.token);
    return tokens;
}

std::set<int32_t> drawn(const std::vector<float>& logits, const SamplingParams& params, int n = 400) {
    SamplerRng rng(11);
    SamplerWorkspace workspace;
    std::set<int32_t> tokens;
    for (int i = 0; i < n; ++i) tokens.insert(sample_token(logits, params, rng, workspace));
    return tokens;
}

// p = (1/2, 1/4, 1/8, 1/8): entropy H = 1.75 ln 2 = 1.213 nats; -ln p = (0.693, 1.386, 2.079, 2.079), so
// |-ln p - H| = (0.520, 0.173, 0.866, 0.866): token 1 is the most typical, then 0, then 2 and 3 (a tie,
// lower id first). Cumulative mass in that order: 0.25, 0.75, 0.875, 1.
const std::vector<float> kHalves = {std::log(0.5f), std::log(0.25f), std::log(0.125f), std::log(0.125f)};

TEST(TypicalSampling, HandWorkedDistribution) {
    EXPECT_EQ(kept(kHalves, 0.2f), (std::vector<int32_t>{1}));  // 0.25 > 0.2 already
    EXPECT_EQ(kept(kHalves, 0.5f), (std::vector<int32_t>{1, 0}));
    EXPECT_EQ(kept(kHalves, 0.8f), (std::vector<int32_t>{1, 0, 2}));
    EXPECT_EQ(kept(kHalves, 0.9f), (std::vector<int32_t>{1, 0, 2, 3}));
    EXPECT_EQ(kept(kHalves, 1.0f), (std::vector<int32_t>{0, 1, 2, 3}));  // off: untouched
}

TEST(TypicalSampling, KeepsAtLeastOneCandidate) {
    EXPECT_EQ(kept({0.0f, -20.0f, -20.0f}, 1e-6f).size(), 1u);
    EXPECT_EQ(kept({3.0f}, 0.1f), (std::vector<int32_t>{0}));
}

// Generated with NumPy (float64), seed 27:
//   logits = (rng.standard_normal(n) * scale).astype(np.float32); p = softmax(logits);
//   H = -(p * log p).sum(); order tokens by (|-log p - H|, id); keep the shortest prefix whose cumsum > typical_p.
// The cumulative mass at each cut is at least 0.0027 away from typical_p, so float rounding cannot move it.
struct ReferenceCase {
    std::vector<float> logits;
    float typical_p;
    std::vector<int32_t> kept;  // sorted
};

const ReferenceCase kReference[] = {
    {{1.25444829f, 0.77690202f, 0.964881122f, -1.08217835f, 0.867017329f, -0.168160766f, -0.189660981f, 1.12056649f,
      -0.436779052f, -1.27964532f, -0.469499767f, -1.19682717f, -1.8398571f, -0.145556971f, 0.398278981f, -2.16206121f},
     0.5f,
     {1, 2, 4, 7, 14}},
    {{0.0289546121f, 0.510396242f,  0.346382082f, -2.54018712f, -0.621922672f, -0.372431338f,
      0.865952194f,  -2.57470274f,  0.766825557f, 1.98376012f,  -4.57529068f,  0.447878242f,
      -3.05322671f,  -0.340933859f, -1.36029673f, 2.54727006f,  0.114217371f,  1.59057736f,
      -2.09355783f,  0.921054542f,  2.8447454f,   -1.41451383f, 1.33174753f,   0.962739408f},
     0.9f,
     {1, 6, 8, 9, 11, 15, 17, 19, 20, 22, 23}},
    {{-0.194021925f, -3.75448036f,  0.849305928f, -0.810864031f, 1.80605912f, 2.33664727f,  4.60362005f,
      -2.50967002f,  2.59512568f,   2.10246062f,  0.226269662f,  1.83537781f, 0.395079046f, 2.01391697f,
      1.17600131f,   -1.68786907f,  0.320442289f, 1.99329019f,   -2.5546155f, -1.19483507f, 3.94406557f,
      0.974420011f,  -1.85583878f,  -1.68338609f, 4.26304293f,   1.4159193f,  -5.66455317f, 1.57920885f,
      -2.62890863f,  -0.309766591f, -4.75442314f, -0.816488862f},
     0.3f,
     {20, 24}},
    {{-0.377871722f, -0.598198593f, 0.461013764f,  1.24126077f,   0.282822758f,   0.0993278101f, -0.613635719f,
      -0.126592472f, -0.33436501f,  -0.933592796f, 0.27526319f,   -0.0294225235f, -0.363117754f, -0.748335481f,
      0.222238153f,  0.674847364f,  0.0475518778f, -0.254975766f, 0.306491852f,   -0.488966972f},
     0.95f,
     {0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}},
    {{-8.72216797f, 6.84771442f,  6.74964285f,  -1.20823729f,  0.27341947f,  6.66937733f,  -4.40518188f, 0.47919935f,
      3.46461558f,  6.95277405f,  -3.21451116f, -3.26182818f,  0.755462766f, -2.31964636f, 6.18530798f,  -3.00362229f,
      0.74985218f,  0.695325732f, -1.08797932f, -6.7341156f,   5.29128599f,  0.789729416f, 2.73799849f,  2.36903381f,
      -2.25138855f, -1.7409333f,  -1.75762951f, 4.6204915f,    -2.09626722f, -8.99792099f, -1.2733382f,  -3.67891669f,
      3.71575451f,  -2.6323719f,  1.58072245f,  -0.250603914f, 0.669652343f, -3.61086535f, -1.89054811f, -0.323402256f},
     0.7f,
     {1, 2, 5, 9, 14}},
};

TEST(TypicalSampling, MatchesNumPyReferenceOnRandomLogits) {
    for (const ReferenceCase& reference : kReference) {
        std::vector<int32_t> tokens = kept(reference.logits, reference.typical_p);
        std::sort(tokens.begin(), tokens.end());
        EXPECT_EQ(tokens, reference.kept) << "typical_p " << reference.typical_p;
    }
}

TEST(TypicalSampling, DrawsOnlyTheKeptTokens) {
    SamplingParams params;
    params.typical_p = 0.2f;
    EXPECT_EQ(drawn(kHalves, params), (std::set<int32_t>{1}));  // never the most likely token
    params.typical_p = 0.8f;
    EXPECT_EQ(drawn(kHalves, params), (std::set<int32_t>{0, 1, 2}));
    params.typical_p = 1.0f;
    EXPECT_EQ(drawn(kHalves, params), (std::set<int32_t>{0, 1, 2, 3}));
}

// llama.cpp's order: top-k, then typical over what top-k kept (renormalised), then top-p and min-p.
TEST(TypicalSampling, RunsAfterTopKAndBeforeTopP) {
    SamplingParams params;
    params.top_k = 2;  // keeps 0 and 1: p = (2/3, 1/3), H = 0.637; |-ln p - H| = (0.231, 0.462): 0 is typical
    params.typical_p = 0.5f;
    EXPECT_EQ(drawn(kHalves, params), (std::set<int32_t>{0}));
    params.top_k = 0;     // without top-k the same typical_p keeps 1 and 0; top-p 0.5 of those (mass 1/3, 2/3)
    params.top_p = 0.5f;  // then keeps the most likely one
    EXPECT_EQ(drawn(kHalves, params), (std::set<int32_t>{0}));
    params.typical_p = 0.2f;  // typical keeps 1 alone; top-p cannot bring 0 back
    EXPECT_EQ(drawn(kHalves, params), (std::set<int32_t>{1}));
}

TEST(TypicalSampling, OneIsOffAndTheDrawsAreUnchanged) {
    const std::vector<float> logits = {0.3f, -1.0f, 2.0f, 0.7f, 1.1f, -0.2f, 0.0f, 1.9f};
    SamplingParams plain, typical_off;
    typical_off.typical_p = 1.0f;
    SamplerRng a(5), b(5);
    SamplerWorkspace wa, wb;
    for (int i = 0; i < 100; ++i)
        EXPECT_EQ(sample_token(logits, plain, a, wa), sample_token(logits, typical_off, b, wb));
}

TEST(TypicalSampling, IgnoresTokensTheGrammarDisallows) {
    // Only tokens 2 and 3 allowed: p = (1/2, 1/2), every token as typical as the other; 0.4 keeps token 2
    // (the tie goes to the lower id), and the disallowed token 1 (the most typical of all four) never appears.
    const std::vector<uint64_t> allowed = {0b1100};
    SamplingParams params;
    params.typical_p = 0.4f;
    SamplerRng rng(3);
    SamplerWorkspace workspace;
    std::set<int32_t> tokens;
    for (int i = 0; i < 100; ++i) tokens.insert(sample_token(kHalves, params, rng, workspace, allowed));
    EXPECT_EQ(tokens, (std::set<int32_t>{2}));
}

}  // namespace sampler_typical_test
}  // namespace
}  // namespace tempered
