#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tempered {
namespace {

using Candidate = SamplerWorkspace::Candidate;

// Most likely first; equal values by token id, so the order never depends on the sort algorithm.
bool more_likely(const Candidate& a, const Candidate& b) {
    return a.value != b.value ? a.value > b.value : a.token < b.token;
}

// Most likely first over a prefix of the candidates long enough to hold `mass` (a share of `total`,
// the sum of every candidate's weight): a vocabulary-sized sort only when the distribution is flat.
size_t sort_prefix_holding(std::vector<Candidate>& candidates, float mass, float total) {
    size_t sorted = std::min<size_t>(64, candidates.size());
    while (true) {
        const auto middle = candidates.begin() + static_cast<std::ptrdiff_t>(sorted);
        std::nth_element(candidates.begin(), middle, candidates.end(), more_likely);
        std::sort(candidates.begin(), middle, more_likely);
        float prefix = 0.0f;
        for (size_t i = 0; i < sorted; ++i) prefix += candidates[i].value;
        if (prefix >= mass * total || sorted == candidates.size()) return sorted;
        sorted = sorted * 8 >= candidates.size() / 2 ? candidates.size() : sorted * 8;
    }
}

// Weights sorted most likely first (at least up to the cut): keeps the smallest prefix whose mass
// reaches top_p of `total`, and at least one candidate.
void keep_top_p(std::vector<Candidate>& candidates, float top_p, float total) {
    if (top_p >= 1.0f) return;
    sort_prefix_holding(candidates, top_p, total);
    float mass = 0.0f;
    size_t keep = 0;
    while (keep < candidates.size() && (keep == 0 || mass < top_p * total)) mass += candidates[keep++].value;
    candidates.resize(keep);
}

// Drops candidates whose weight is below min_p of the most likely one's (weight 1), keeping order.
void keep_min_p(std::vector<Candidate>& candidates, float min_p) {
    if (min_p <= 0.0f) return;
    std::erase_if(candidates, [min_p](const Candidate& c) { return c.value < min_p; });
}

}  // namespace

SamplerRng::SamplerRng(uint64_t seed, uint64_t stream) : increment_((stream << 1) | 1) {
    next_u32();
    state_ += seed;
    next_u32();
}

uint32_t SamplerRng::next_u32() {
    const uint64_t old = state_;
    state_ = old * 6364136223846793005ull + increment_;
    const auto xorshifted = static_cast<uint32_t>(((old >> 18) ^ old) >> 27);
    const auto rotation = static_cast<uint32_t>(old >> 59);
    return (xorshifted >> rotation) | (xorshifted << ((32 - rotation) & 31));
}

float SamplerRng::next_unit_float() { return static_cast<float>(next_u32() >> 8) * 0x1.0p-24f; }

int32_t greedy_token(std::span<const float> logits) {
    int32_t best = 0;
    for (size_t i = 1; i < logits.size(); ++i) {
        if (logits[i] > logits[static_cast<size_t>(best)]) best = static_cast<int32_t>(i);
    }
    return best;
}

int32_t sample_token(std::span<const float> logits, const SamplingParams& params, SamplerRng& rng,
                     SamplerWorkspace& workspace) {
    auto& candidates = workspace.candidates;
    candidates.resize(logits.size());
    for (size_t i = 0; i < logits.size(); ++i) {
        const float logit = std::isnan(logits[i]) ? -std::numeric_limits<float>::infinity() : logits[i];
        candidates[i] = {static_cast<int32_t>(i), logit};
    }
    for (const auto& [token, bias] : params.logit_bias) {
        if (token >= 0 && static_cast<size_t>(token) < candidates.size()) candidates[static_cast<size_t>(token)].value += bias;
    }
    const auto best = std::min_element(candidates.begin(), candidates.end(), more_likely);
    if (params.temperature <= 0.0f || params.top_k == 1 || !std::isfinite(best->value)) return best->token;

    // Weights exp((logit - best) / T): the best has weight 1, so min_p compares with min_p itself and
    // nothing is normalised; only top_k and top_p need order, and only over the head of the list.
    const float best_value = best->value;
    for (auto& c : candidates) c.value = std::exp((c.value - best_value) / params.temperature);
    if (params.top_k > 0 && static_cast<size_t>(params.top_k) < candidates.size()) {
        std::partial_sort(candidates.begin(), candidates.begin() + params.top_k, candidates.end(), more_likely);
        candidates.resize(static_cast<size_t>(params.top_k));
    }
    if (params.top_p < 1.0f) {
        float all = 0.0f;
        for (const auto& c : candidates) all += c.value;
        keep_top_p(candidates, params.top_p, all);
    }
    keep_min_p(candidates, params.min_p);

    float total = 0.0f;
    for (const auto& c : candidates) total += c.value;
    const float target = rng.next_unit_float() * total;
    float mass = 0.0f;
    for (const auto& c : candidates) {
        mass += c.value;
        if (target < mass) return c.token;
    }
    return candidates.back().token;  // rounding left target at the very top
}

}  // namespace tempered
