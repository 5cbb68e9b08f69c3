// Which routed experts each token runs, and with what weight: DeepSeek-V3's router as llama.cpp's
// build_moe_ffn computes it for `deepseek2` GGUFs.
//
// Per token, over the router logits l (expert_count):
//   1. scores s = softmax(l) or sigmoid(l) (MoeConfig::gating), in float; gpt-oss's SoftmaxOfChosen: s = l,
//      and step 5's weights become the softmax of the chosen s (before any normalizing and scaling).
//   2. selection scores c = s + correction_bias (exp_probs_b; DeepSeek-V3's load-balancing bias). The bias
//      decides WHICH experts are chosen, never their weights.
//   3. group-limited routing (MoeConfig::group_count > 1): experts are split into group_count consecutive
//      groups; a group's score is the sum of its two highest c (as DeepSeek-V3 and llama.cpp; DeepSeek-V2's
//      group maximum is not what deepseek2 GGUFs mean in llama.cpp), and only the groups_per_token best
//      groups stay eligible.
//   4. the experts_per_token eligible experts with the highest c, best first.
//   5. weights: their s (unbiased); if normalize_weights, divided by their sum (clamped below at
//      6.103515625e-5, the smallest normal half, as llama.cpp does); then times routed_scaling_factor.
// Ties (equal c, or equal group scores) go to the lower expert (group) index, so the choice is a pure
// function of the inputs on every machine. scripts/fixtures/make_moe_routing_fixtures.py is the NumPy
// reference of exactly this rule (tests/unit/moe_routing_test.cpp holds the two together).
#pragma once

#include <cstdint>

#include "models/moe_config.h"

namespace tempered {

struct ExpertChoice {
    int32_t expert = 0;
    float weight = 0.0f;
};

// router_logits (tokens, expert_count); correction_bias (expert_count) or nullptr;
// out (tokens, experts_per_token), each token's choices best first. `config` must pass validate_moe_config.
// margins (tokens) or nullptr: each token's selection margin, how far its choice is from changing: the
// smaller of the k-th minus the (k+1)-th eligible selection score and, when group-limited, the last kept
// minus the first dropped group score (+inf where nothing is left out). Noise smaller than a quarter of
// it in each selection score cannot change the chosen set (half for the expert gap; a group's score sums
// two selection scores, so the gap between two groups moves by up to four times the noise).
void route_experts(const MoeConfig& config, const float* router_logits, const float* correction_bias, int64_t tokens,
                   ExpertChoice* out, float* margins = nullptr);

}  // namespace tempered
