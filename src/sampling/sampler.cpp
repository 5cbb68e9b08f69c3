#include "sampling/sampler.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/cpu/ops.h"

namespace tempered {
namespace {

using Candidate = SamplerWorkspace::Candidate;

// Most likely first; equal values by token id, so the order never depends on the sort algorithm.
bool more_likely(const Candidate& a, const Candidate& b) {
    return a.value != b.value ? a.value > b.value : a.token < b.token;
}

// Orders the candidates so that the most likely ones holding `mass` (a share of `total`, the sum of
// every candidate's weight) come first, those of them that the cut may split sorted most likely first.
// The weights are bucketed by their float bits (for positive floats, bit order is value order; a
// bucket spans about 3%), the buckets wholly inside the nucleus go to the front unsorted (all of them
// are kept), and only the bucket the cut falls in is sorted: a few linear passes, never a sort of the
// vocabulary, however flat the distribution.
void order_prefix_holding(std::vector<Candidate>& candidates, float mass, float total) {
    constexpr int kBucketShift = 18;
    auto bucket_of = [](const Candidate& c) { return std::bit_cast<uint32_t>(c.value) >> kBucketShift; };
    thread_local std::vector<float> bucket_mass;
    bucket_mass.assign(size_t{1} << (32 - kBucketShift), 0.0f);
    for (const Candidate& c : candidates) bucket_mass[bucket_of(c)] += c.value;
    uint32_t cut = static_cast<uint32_t>(bucket_mass.size()) - 1;
    for (float held = 0.0f; cut > 0; --cut) {
        held += bucket_mass[cut];
        if (held >= mass * total) break;
    }
    const auto inside =
        std::partition(candidates.begin(), candidates.end(), [&](const Candidate& c) { return bucket_of(c) > cut; });
    const auto cut_end =
        std::partition(inside, candidates.end(), [&](const Candidate& c) { return bucket_of(c) == cut; });
    std::sort(inside, cut_end, more_likely);
}

// Keeps the smallest set of most likely candidates whose mass reaches top_p of `total`, and at least
// one candidate.
void keep_top_p(std::vector<Candidate>& candidates, float top_p, float total) {
    if (top_p >= 1.0f) return;
    order_prefix_holding(candidates, top_p, total);
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

// Locally typical sampling (Meister et al. 2022, as llama.cpp's llama_sampler_typical with min_keep 1):
// with p the candidates' weights normalised and H their entropy, takes the candidates in order of
// |-log p - H| (then by token id) until their mass exceeds typical_p, and keeps those. In double, so
// that the cut does not depend on the summation's rounding.
void keep_typical(std::vector<Candidate>& candidates, float typical_p) {
    if (typical_p >= 1.0f || candidates.empty()) return;
    double total = 0.0;
    for (const Candidate& c : candidates) total += c.value;
    double entropy = 0.0;
    for (const Candidate& c : candidates) {
        const double p = c.value / total;
        entropy -= p * std::log(p);
    }
    struct Scored {
        double score;  // |-log p - H|
        Candidate candidate;
    };
    thread_local std::vector<Scored> scored;
    scored.clear();
    for (const Candidate& c : candidates) scored.push_back({std::fabs(-std::log(c.value / total) - entropy), c});
    std::sort(scored.begin(), scored.end(), [](const Scored& a, const Scored& b) {
        return a.score != b.score ? a.score < b.score : a.candidate.token < b.candidate.token;
    });
    candidates.clear();
    double mass = 0.0;
    for (const Scored& s : scored) {
        candidates.push_back(s.candidate);
        mass += s.candidate.value / total;
        if (mass > typical_p) break;
    }
}

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

namespace {

// The largest value; eight lanes so that the compiler vectorises it (max is exact in any order).
float max_value(const std::vector<float>& values) {
    float lanes[8];
    std::fill(lanes, lanes + 8, -std::numeric_limits<float>::infinity());
    size_t i = 0;
    for (; i + 8 <= values.size(); i += 8)
        for (int j = 0; j < 8; ++j) lanes[j] = std::max(lanes[j], values[i + j]);
    float best = *std::max_element(lanes, lanes + 8);
    for (; i < values.size(); ++i) best = std::max(best, values[i]);
    return best;
}

// Tokens outside `allowed` get logit -inf: weight 0, never drawn, never counted by truncation.
void mask_disallowed(std::vector<float>& logits, AllowedTokens allowed) {
    for (size_t word = 0; word < allowed.size(); ++word) {
        const uint64_t bits = allowed[word];
        if (bits == ~uint64_t{0}) continue;
        const size_t end = std::min(logits.size(), (word + 1) * 64);
        for (size_t token = word * 64; token < end; ++token)
            if (!((bits >> (token & 63)) & 1)) logits[token] = -std::numeric_limits<float>::infinity();
    }
    for (size_t token = allowed.size() * 64; token < logits.size(); ++token)
        logits[token] = -std::numeric_limits<float>::infinity();
}

// Draws a token with probability weight / total by token id, in a fixed order: 256-token blocks are
// summed in eight lanes, the block holding the target is found, then scanned token by token.
int32_t draw_by_weight(const std::vector<float>& weights, SamplerRng& rng) {
    constexpr size_t kBlock = 256;
    const size_t blocks = (weights.size() + kBlock - 1) / kBlock;
    thread_local std::vector<float> block_sums;
    block_sums.resize(blocks);
    float total = 0.0f;
    for (size_t b = 0; b < blocks; ++b) {
        const size_t begin = b * kBlock, end = std::min(weights.size(), begin + kBlock);
        float lanes[8] = {};
        size_t i = begin;
        for (; i + 8 <= end; i += 8)
            for (int j = 0; j < 8; ++j) lanes[j] += weights[i + j];
        float sum = ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) + ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]));
        for (; i < end; ++i) sum += weights[i];
        block_sums[b] = sum;
        total += sum;
    }
    const float target = rng.next_unit_float() * total;
    float mass = 0.0f;
    int32_t last_with_weight = 0;
    for (size_t b = 0; b < blocks; ++b) {
        if (block_sums[b] > 0.0f && target >= mass + block_sums[b] && b + 1 < blocks) {
            mass += block_sums[b];
            continue;
        }
        const size_t begin = b * kBlock, end = std::min(weights.size(), begin + kBlock);
        for (size_t i = begin; i < end; ++i) {
            if (weights[i] <= 0.0f) continue;
            mass += weights[i];
            last_with_weight = static_cast<int32_t>(i);
            if (target < mass) return last_with_weight;
        }
    }
    return last_with_weight;  // rounding left target at the very top
}

}  // namespace

int32_t sample_token(std::span<const float> logits, const SamplingParams& params, SamplerRng& rng,
                     SamplerWorkspace& workspace, AllowedTokens allowed) {
    std::vector<float>& weights = workspace.weights;
    weights.resize(logits.size());
    for (size_t i = 0; i < logits.size(); ++i)
        weights[i] = std::isnan(logits[i]) ? -std::numeric_limits<float>::infinity() : logits[i];
    for (const auto& [token, bias] : params.logit_bias) {
        if (token >= 0 && static_cast<size_t>(token) < weights.size()) weights[static_cast<size_t>(token)] += bias;
    }
    if (!allowed.empty()) mask_disallowed(weights, allowed);
    const float best_value = max_value(weights);
    const auto best = static_cast<int32_t>(std::find(weights.begin(), weights.end(), best_value) - weights.begin());
    if (is_greedy(params) || !std::isfinite(best_value)) return best;

    // Weights exp((logit - best) / T): the best has weight 1, so min_p compares with min_p itself and
    // nothing is normalised. Only top_k, typical_p and top_p need an order (top_p only over the head of the
    // list; typical_p sorts every candidate by its own measure, as llama.cpp does).
    exp_of_scaled_difference(weights.data(), best_value, 1.0f / params.temperature, weights.data(),
                             static_cast<int64_t>(weights.size()));
    const bool truncates_by_rank = (params.top_k > 0 && static_cast<size_t>(params.top_k) < weights.size()) ||
                                   params.typical_p < 1.0f || params.top_p < 1.0f;
    if (!truncates_by_rank) {
        if (params.min_p > 0.0f)
            for (float& w : weights) w = w < params.min_p ? 0.0f : w;
        return draw_by_weight(weights, rng);
    }

    auto& candidates = workspace.candidates;
    candidates.clear();
    for (size_t i = 0; i < weights.size(); ++i)  // a weight of 0 can never be drawn
        if (weights[i] > 0.0f) candidates.push_back({static_cast<int32_t>(i), weights[i]});
    if (params.top_k > 0 && static_cast<size_t>(params.top_k) < candidates.size()) {
        std::partial_sort(candidates.begin(), candidates.begin() + params.top_k, candidates.end(), more_likely);
        candidates.resize(static_cast<size_t>(params.top_k));
    }
    keep_typical(candidates, params.typical_p);
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
