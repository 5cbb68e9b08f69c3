// Choosing the next token from logits. sample_token is a pure function of (logits, params, rng state):
// the same three give the same token, so a request with a seed is reproducible whatever else the
// server is doing. Order (issue 12): logit bias, the allowed-token mask (a grammar's), temperature,
// truncation (top_k, typical_p, top_p, min_p, counting allowed tokens only: llama.cpp's default chain order
// for these four), then a draw. Repetition penalties (and
// DRY) come before, in next_token.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace tempered {

struct SamplingParams {
    float temperature = 1.0f;  // 0: greedy (argmax, lowest id on ties)
    int32_t top_k = 0;         // keep the k most likely tokens; 0: all
    float top_p = 1.0f;        // keep the smallest set of most likely tokens whose mass reaches top_p; 1: all
    // Locally typical sampling: keep the smallest set of tokens, taken by how close their information
    // (-log p) is to the entropy, whose mass exceeds typical_p; at least one. 1: all.
    float typical_p = 1.0f;
    float min_p = 0.0f;  // drop tokens less likely than min_p times the most likely one; 0: none
    std::vector<std::pair<int32_t, float>> logit_bias;  // (token id, added to its logit); ids out of range ignored
};

// PCG32 (O'Neill): small state, so it is cheap to keep one per request and to copy.
class SamplerRng {
public:
    explicit SamplerRng(uint64_t seed, uint64_t stream = 0x9E3779B97F4A7C15ull);
    uint32_t next_u32();
    float next_unit_float();  // uniform in [0, 1)

private:
    uint64_t state_ = 0;
    uint64_t increment_ = 0;
};

// Buffers reused across calls so that sampling allocates nothing once warm.
struct SamplerWorkspace {
    struct Candidate {
        int32_t token;
        float value;  // a weight exp((logit - best) / T)
    };
    std::vector<float> weights;         // (vocab): logits, then their weights, by token id
    std::vector<Candidate> candidates;  // the tokens with weight, when top_k / typical_p / top_p need them
};

// One bit per token id (bit t of word t / 64): the tokens that may be drawn. Empty: every token.
using AllowedTokens = std::span<const uint64_t>;

// The next token for `logits` (vocab), drawn from the distribution over `allowed` tokens only. rng is
// advanced by exactly one draw unless the choice is greedy.
int32_t sample_token(std::span<const float> logits, const SamplingParams& params, SamplerRng& rng,
                     SamplerWorkspace& workspace, AllowedTokens allowed = {});

// The typical_p stage (see SamplingParams) over candidates holding weights, in any order: leaves those it
// keeps, in the order it took them. A stage of sample_token, declared here so tests can hold it against a
// reference.
void keep_typical(std::vector<SamplerWorkspace::Candidate>& candidates, float typical_p);

// The draw is an argmax and takes nothing from the rng.
inline bool is_greedy(const SamplingParams& params) { return params.temperature <= 0.0f || params.top_k == 1; }

// argmax, the lowest id among equal maxima.
int32_t greedy_token(std::span<const float> logits);

}  // namespace tempered
