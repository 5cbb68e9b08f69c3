// The attention arithmetic of attention.h, written once over a vector type of 16 floats. `Vec`
// provides: zero, set1, load, store, add, sub, mul, fma (a * b + c, one rounding), max, hmax, hsum
// (((v[i] + v[i+8]) then + [i+4], + [i+2], + [i+1]: one fixed order), keep_first (lanes >= count set
// to a fill value), exp (canonical_exp below, lane by lane) and kv_to_float (exact, as ops.h's). Only headers; included by
// attention_scalar.cpp, attention_avx2.cpp and attention_avx512.cpp, each with its own Vec.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/half.h"
#include "kernels/cpu/attention.h"

namespace tempered::attention_detail {

inline constexpr int kChunk = 16;  // positions per key/value chunk: one vector of scores

// exp(x) for attention weights: clamp to [-87, 88], n = round(x / ln 2), r = x - n ln 2 (two parts),
// a degree-6 Taylor polynomial for exp(r) (|r| <= 0.35: relative error < 2e-7) times 2^n. Every
// vector exp implements exactly these operations.
inline constexpr float kExpMin = -87.0f, kExpMax = 88.0f, kLog2e = 1.44269504f;
inline constexpr float kRoundMagic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
inline constexpr float kLn2High = 0.693145752f, kLn2Low = 1.42860677e-6f;
inline constexpr float kExpCoefficients[7] = {1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f, 1.0f, 1.0f};

inline float canonical_exp(float x) {
    x = std::min(std::max(x, kExpMin), kExpMax);
    const float n = std::fma(x, kLog2e, kRoundMagic) - kRoundMagic;
    float r = std::fma(n, -kLn2High, x);
    r = std::fma(n, -kLn2Low, r);
    float p = kExpCoefficients[0];
    for (int i = 1; i < 7; ++i) p = std::fma(p, r, kExpCoefficients[i]);
    const auto scale_bits = static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23;
    return p * std::bit_cast<float>(scale_bits);
}

// Per-thread scratch, carved from the caller's floats.
struct Scratch {
    float* keys_transposed;  // (head_dim, kChunk): lane k of row d is element d of key k
    float* values;           // (kChunk, head_dim)
    float* weights;          // (kChunk): one query's attention weights over the chunk
    float* running_max;      // (rows)
    float* denominator;      // (rows)
    float* output;           // (rows, head_dim): unnormalised
};

inline int64_t scratch_floats(int64_t rows, int64_t head_dim) {
    return 2 * kChunk * head_dim + kChunk + rows * (head_dim + 2);
}

inline Scratch carve(float* scratch, int64_t rows, int64_t head_dim) {
    Scratch s;
    s.keys_transposed = scratch;
    s.values = s.keys_transposed + kChunk * head_dim;
    s.weights = s.values + kChunk * head_dim;
    s.running_max = s.weights + kChunk;
    s.denominator = s.running_max + rows;
    s.output = s.denominator + rows;
    return s;
}

// Positions [base, base + count) of one KV head, as float; lanes past count are zero.
template <typename Vec>
void load_chunk(const KvHeadView& kv, std::span<const int32_t> block_table, int64_t base, int64_t count,
                       int64_t head_dim, const Scratch& s) {
    std::fill(s.keys_transposed, s.keys_transposed + kChunk * head_dim, 0.0f);
    std::fill(s.values, s.values + kChunk * head_dim, 0.0f);
    float key[512];  // head_dim <= 512 (attention_run_supports)
    for (int64_t k = 0; k < count; ++k) {
        const int64_t position = base + k;
        const int64_t offset = block_table[static_cast<size_t>(position / kv.block_size)] * kv.block_stride +
                               (position % kv.block_size) * kv.slot_stride;
        Vec::kv_to_float(kv.type, kv.keys + offset, key, head_dim);
        for (int64_t d = 0; d < head_dim; ++d) s.keys_transposed[d * kChunk + k] = key[d];
        Vec::kv_to_float(kv.type, kv.values + offset, s.values + k * head_dim, head_dim);
    }
}

// Scores of one query over the chunk: four interleaved fma chains over d (d mod 4), added as
// (c0 + c1) + (c2 + c3), times scale.
template <typename Vec>
typename Vec::Type chunk_scores(const float* q, const Scratch& s, int64_t head_dim, float scale) {
    typename Vec::Type chains[4] = {Vec::zero(), Vec::zero(), Vec::zero(), Vec::zero()};
    for (int64_t d = 0; d < head_dim; d += 4)
        for (int c = 0; c < 4; ++c)
            chains[c] = Vec::fma(Vec::set1(q[d + c]), Vec::load(s.keys_transposed + (d + c) * kChunk), chains[c]);
    return Vec::mul(Vec::add(Vec::add(chains[0], chains[1]), Vec::add(chains[2], chains[3])), Vec::set1(scale));
}

// One query row of the run against one chunk of which the first `visible` positions are causal.
template <typename Vec>
void update_row(const float* q, int64_t row, int64_t visible, int64_t head_dim, float scale, const Scratch& s) {
    using V = typename Vec::Type;
    const float negative_infinity = -std::numeric_limits<float>::infinity();
    const V scores = Vec::keep_first(chunk_scores<Vec>(q, s, head_dim, scale), visible, negative_infinity);
    const float old_max = s.running_max[row];
    const float new_max = std::max(old_max, Vec::hmax(scores));
    const float correction = canonical_exp(old_max - new_max);
    const V weights = Vec::keep_first(Vec::exp(Vec::sub(scores, Vec::set1(new_max))), visible, 0.0f);
    s.running_max[row] = new_max;
    s.denominator[row] = std::fma(s.denominator[row], correction, Vec::hsum(weights));
    Vec::store(s.weights, weights);
    float* output = s.output + row * head_dim;
    for (int64_t d = 0; d < head_dim; d += kChunk) {
        V acc = Vec::mul(Vec::load(output + d), Vec::set1(correction));
        for (int64_t k = 0; k < visible; ++k) acc = Vec::fma(Vec::set1(s.weights[k]), Vec::load(s.values + k * head_dim + d), acc);
        Vec::store(output + d, acc);
    }
}

template <typename Vec>
void attend_run(const AttentionRun& run, const KvHeadView& kv, std::span<const int32_t> block_table, float scale,
                float* scratch) {
    const int64_t rows = run.tokens * run.heads, head_dim = run.head_dim;
    const Scratch s = carve(scratch, rows, head_dim);
    std::fill(s.running_max, s.running_max + rows, -std::numeric_limits<float>::infinity());
    std::fill(s.denominator, s.denominator + rows, 0.0f);
    std::fill(s.output, s.output + rows * head_dim, 0.0f);
    const int64_t length = run.first_position + run.tokens;  // positions the last token sees
    for (int64_t base = 0; base < length; base += kChunk) {
        load_chunk<Vec>(kv, block_table, base, std::min<int64_t>(kChunk, length - base), head_dim, s);
        for (int64_t t = 0; t < run.tokens; ++t) {
            const int64_t visible = std::min<int64_t>(kChunk, run.first_position + t + 1 - base);
            if (visible <= 0) continue;  // this chunk is wholly in the token's future
            for (int64_t h = 0; h < run.heads; ++h)
                update_row<Vec>(run.q + t * run.token_stride + h * head_dim, t * run.heads + h, visible, head_dim,
                                scale, s);
        }
    }
    for (int64_t t = 0; t < run.tokens; ++t) {
        for (int64_t h = 0; h < run.heads; ++h) {
            const int64_t row = t * run.heads + h;
            const typename Vec::Type inverse = Vec::set1(1.0f / s.denominator[row]);
            float* out = run.out + t * run.token_stride + h * head_dim;
            for (int64_t d = 0; d < head_dim; d += kChunk) Vec::store(out + d, Vec::mul(Vec::load(s.output + row * head_dim + d), inverse));
        }
    }
}

}  // namespace tempered::attention_detail
