#include "models/moe_routing.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

namespace tempered {
namespace {

// Scratch for one token, reused across tokens.
struct RoutingScratch {
    std::vector<float> scores;        // (expert_count): softmax or sigmoid of the logits; the weights
    std::vector<float> selection;     // (expert_count): scores + correction bias; -inf outside the chosen groups
    std::vector<float> group_scores;  // (group_count)
    std::vector<int32_t> order;       // (max(expert_count, group_count)): indices being ranked
};

void gate_scores(ExpertGating gating, const float* logits, int64_t count, float* scores) {
    if (gating == ExpertGating::SoftmaxOfChosen) {  // chosen by the raw logits; weighed after the choice
        std::copy_n(logits, count, scores);
        return;
    }
    if (gating == ExpertGating::Sigmoid) {
        for (int64_t e = 0; e < count; ++e) scores[e] = 1.0f / (1.0f + std::exp(-logits[e]));
        return;
    }
    const float max_logit = *std::max_element(logits, logits + count);
    float sum = 0.0f;
    for (int64_t e = 0; e < count; ++e) {
        scores[e] = std::exp(logits[e] - max_logit);
        sum += scores[e];
    }
    for (int64_t e = 0; e < count; ++e) scores[e] /= sum;
}

// NaN ranks last, so that a broken activation cannot break the sort's ordering contract.
float rank_key(float value) { return std::isnan(value) ? -std::numeric_limits<float>::infinity() : value; }

// The `k` indices of the highest values[0 .. count), best first; equal values: the lower index first.
void top_k(const float* values, int64_t count, int64_t k, std::vector<int32_t>& order) {
    order.resize(static_cast<size_t>(count));
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [values](int32_t a, int32_t b) {
        const float x = rank_key(values[a]), y = rank_key(values[b]);
        return x > y || (x == y && a < b);
    });
    order.resize(static_cast<size_t>(k));
}

// values[a] - values[b] of the last kept and the first left-out index of a ranking of `kept` + 1 or more,
// +inf when nothing is left out (fewer than kept + 1 indices, or the first left out is -inf).
float ranking_margin(const float* values, int64_t count, int64_t kept, std::vector<int32_t>& order) {
    if (count <= kept) return std::numeric_limits<float>::infinity();
    top_k(values, count, kept + 1, order);
    return rank_key(values[order[static_cast<size_t>(kept - 1)]]) - rank_key(values[order[static_cast<size_t>(kept)]]);
}

// Sets the selection scores of every expert outside the groups_per_token best groups to -inf; returns
// the group boundary's margin.
float keep_best_groups(const MoeConfig& config, RoutingScratch& scratch) {
    const int64_t per_group = config.experts_per_group();
    const int64_t summed = std::min<int64_t>(2, per_group);
    scratch.group_scores.resize(static_cast<size_t>(config.group_count));
    for (int64_t g = 0; g < config.group_count; ++g) {
        const float* group = &scratch.selection[static_cast<size_t>(g * per_group)];
        top_k(group, per_group, summed, scratch.order);
        float score = 0.0f;
        for (int32_t e : scratch.order) score += group[e];
        scratch.group_scores[static_cast<size_t>(g)] = score;
    }
    const float margin =
        ranking_margin(scratch.group_scores.data(), config.group_count, config.groups_per_token, scratch.order);
    top_k(scratch.group_scores.data(), config.group_count, config.groups_per_token, scratch.order);
    std::vector<bool> kept(static_cast<size_t>(config.group_count), false);
    for (int32_t g : scratch.order) kept[static_cast<size_t>(g)] = true;
    for (int64_t e = 0; e < config.expert_count; ++e)
        if (!kept[static_cast<size_t>(e / per_group)])
            scratch.selection[static_cast<size_t>(e)] = -std::numeric_limits<float>::infinity();
    return margin;
}

// The chosen experts' logits (best first) replaced by their softmax.
void softmax_of_chosen(ExpertChoice* chosen, int64_t count) {
    const float best = chosen[0].weight;
    float sum = 0.0f;
    for (int64_t j = 0; j < count; ++j) sum += chosen[j].weight = std::exp(chosen[j].weight - best);
    for (int64_t j = 0; j < count; ++j) chosen[j].weight /= sum;
}

// Routes one token; returns its selection margin (route_experts).
float route_token(const MoeConfig& config, const float* logits, const float* correction_bias, RoutingScratch& scratch,
                  ExpertChoice* out) {
    const int64_t experts = config.expert_count;
    gate_scores(config.gating, logits, experts, scratch.scores.data());
    for (int64_t e = 0; e < experts; ++e) {
        const auto i = static_cast<size_t>(e);
        scratch.selection[i] = correction_bias ? scratch.scores[i] + correction_bias[e] : scratch.scores[i];
    }
    float margin = std::numeric_limits<float>::infinity();
    if (config.group_limited()) margin = keep_best_groups(config, scratch);
    margin =
        std::min(margin, ranking_margin(scratch.selection.data(), experts, config.experts_per_token, scratch.order));
    top_k(scratch.selection.data(), experts, config.experts_per_token, scratch.order);
    float sum = 0.0f;
    for (int64_t j = 0; j < config.experts_per_token; ++j) {
        const int32_t expert = scratch.order[static_cast<size_t>(j)];
        out[j] = ExpertChoice{expert, scratch.scores[static_cast<size_t>(expert)]};
        sum += out[j].weight;
    }
    if (config.gating == ExpertGating::SoftmaxOfChosen) softmax_of_chosen(out, config.experts_per_token);
    const float divisor = config.normalize_weights ? std::max(sum, 6.103515625e-5f) : 1.0f;
    for (int64_t j = 0; j < config.experts_per_token; ++j) {
        if (config.normalize_weights) out[j].weight /= divisor;
        out[j].weight *= config.routed_scaling_factor;
    }
    return margin;
}

}  // namespace

void route_experts(const MoeConfig& config, const float* router_logits, const float* correction_bias, int64_t tokens,
                   ExpertChoice* out, float* margins) {
    RoutingScratch scratch;
    scratch.scores.resize(static_cast<size_t>(config.expert_count));
    scratch.selection.resize(static_cast<size_t>(config.expert_count));
    for (int64_t t = 0; t < tokens; ++t) {
        const float margin = route_token(config, router_logits + t * config.expert_count, correction_bias, scratch,
                                         out + t * config.experts_per_token);
        if (margins) margins[t] = margin;
    }
}

}  // namespace tempered
