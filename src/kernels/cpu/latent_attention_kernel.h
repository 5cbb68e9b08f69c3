// The decode kernel of latent attention (latent_attention.h's attend_latent), written once over a
// 16-lane vector type (attention_kernel.h's Vec, plus transpose) and instantiated for scalar code, AVX2
// and AVX-512 (latent_attention_{scalar,avx2,avx512}.cpp): the three agree bit for bit.
//
// Per chunk of 16 positions: the cache's dimension-major block gives each dimension's 16 positions as
// one vector (the "columns"); the heads' scores are fma chains over the dimensions, four heads at once
// sharing each column load; the latent part is transposed in 16 x 16 tiles into position-major rows, so
// the value sums are one fma of a whole row segment per position. Per head the arithmetic never depends
// on the other heads: scores are four chains over d (d mod 4) added as (c0 + c1) + (c2 + c3), times
// scale; the output takes the weighted rows in position order.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>

#include "kernels/cpu/fast_exp.h"
#include "kernels/cpu/latent_attention.h"

namespace tempered::latent_detail {
// Internal linkage: each file compiled for its own instruction set keeps its own copies, so the linker never
// merges a helper compiled with AVX-512 into the scalar path (as it may with inline functions at -O0).
namespace {

inline constexpr int64_t kChunk = 16;     // positions per chunk: one vector of scores
inline constexpr int64_t kHeadBlock = 4;  // heads scored together: independent chains, shared loads

inline int64_t padded(int64_t n) { return (n + kChunk - 1) / kChunk * kChunk; }

// Per-thread scratch, carved from the caller's floats (latent_attention_scratch_floats).
struct Scratch {
    float* queries;      // (heads, padded width): the queries with zeros past width
    float* columns;      // (padded width, kChunk): dimension d of the chunk's positions
    float* rows;         // (kChunk, padded rank): the chunk's latent part position by position
    float* weights;      // (kHeadBlock, kChunk)
    float* running_max;  // (heads)
    float* denominator;  // (heads)
    float* output;       // (heads, padded rank): unnormalised
};

inline int64_t scratch_floats(int64_t heads, int64_t width, int64_t rank) {
    const int64_t w = padded(width), r = padded(rank);
    return heads * w + w * kChunk + kChunk * r + kHeadBlock * kChunk + heads * (r + 2);
}

inline Scratch carve(float* scratch, int64_t heads, int64_t width, int64_t rank) {
    const int64_t w = padded(width), r = padded(rank);
    Scratch s;
    s.queries = scratch;
    s.columns = s.queries + heads * w;
    s.rows = s.columns + w * kChunk;
    s.weights = s.rows + kChunk * r;
    s.running_max = s.weights + kHeadBlock * kChunk;
    s.denominator = s.running_max + heads;
    s.output = s.denominator + heads;
    return s;
}

// columns (width, kChunk) = 16 consecutive slots of each of `width` dimensions, `stride` bytes apart, from
// first: exact conversions of kType.
template <typename Vec, DType kType>
void convert_columns(const uint8_t* first, int64_t stride, int64_t width, float* columns) {
    for (int64_t d = 0; d < width; ++d)
        Vec::store(columns + d * kChunk, Vec::template load_kv<kType>(first + d * stride));
}

// columns (width, kChunk) = positions [base, base + count) as float. Lanes past count hold whatever the
// block holds there (their scores are masked, their rows never read) or zeros.
template <typename Vec>
void load_columns(const LatentCacheView& cache, std::span<const int32_t> block_table, int64_t base, int64_t count,
                  float* columns) {
    const int64_t slot = base % cache.block_size;
    if (cache.block_size % kChunk != 0) {  // the chunk may straddle blocks: gather it position run by run
        gather_latent_columns(cache, block_table, base, count, kChunk, columns);
        return;
    }
    const uint8_t* block =
        cache.data +
        static_cast<int64_t>(block_table[static_cast<size_t>(base / cache.block_size)]) * cache.block_stride;
    const auto element = static_cast<int64_t>(dtype_traits(cache.type).block_bytes);
    const uint8_t* first = block + slot * element;
    const int64_t stride = cache.block_size * element;
    switch (cache.type) {
        case DType::F16: return convert_columns<Vec, DType::F16>(first, stride, cache.width, columns);
        case DType::BF16: return convert_columns<Vec, DType::BF16>(first, stride, cache.width, columns);
        case DType::F32: return convert_columns<Vec, DType::F32>(first, stride, cache.width, columns);
        case DType::F8_E4M3: {  // codes times each position's scale, one rounding
            float scales[kChunk] = {};
            std::memcpy(scales, block + cache.scale_offset + slot * 4, static_cast<size_t>(count) * 4);
            const auto scale = Vec::load(scales);
            for (int64_t d = 0; d < cache.width; ++d)
                Vec::store(columns + d * kChunk, Vec::mul(Vec::load_e4m3(first + d * stride), scale));
            return;
        }
        default: gather_latent_columns(cache, block_table, base, count, kChunk, columns); return;
    }
}

// Scores of heads [first, first + R) against the chunk's columns, folded into their online softmax:
// weights (R, kChunk) get the chunk's exp weights, and correction[r] the factor the head's output so
// far must take.
template <typename Vec, int R>
void score_heads(const Scratch& s, int64_t first, int64_t width, int64_t count, float scale, float* correction) {
    using V = typename Vec::Type;
    const int64_t w = padded(width);
    V chains[R][4];
    for (auto& head_chains : chains)
        for (auto& chain : head_chains) chain = Vec::zero();
    for (int64_t d = 0; d < w; d += 4) {
        for (int c = 0; c < 4; ++c) {
            const V column = Vec::load(s.columns + (d + c) * kChunk);
            for (int r = 0; r < R; ++r)
                chains[r][c] = Vec::fma(Vec::set1(s.queries[(first + r) * w + d + c]), column, chains[r][c]);
        }
    }
    const float negative_infinity = -std::numeric_limits<float>::infinity();
    for (int r = 0; r < R; ++r) {
        const int64_t head = first + r;
        const V sum = Vec::add(Vec::add(chains[r][0], chains[r][1]), Vec::add(chains[r][2], chains[r][3]));
        const V scores = Vec::keep_first(Vec::mul(sum, Vec::set1(scale)), count, negative_infinity);
        const float old_max = s.running_max[head];
        const float new_max = std::max(old_max, Vec::hmax(scores));
        correction[r] = canonical_exp(old_max - new_max);
        const V weights = Vec::keep_first(Vec::exp(Vec::sub(scores, Vec::set1(new_max))), count, 0.0f);
        s.running_max[head] = new_max;
        s.denominator[head] = std::fma(s.denominator[head], correction[r], Vec::hsum(weights));
        Vec::store(s.weights + r * kChunk, weights);
    }
}

// Outputs of heads [first, first + R) = correction times themselves plus the chunk's weighted rows.
template <typename Vec, int R>
void accumulate_values(const Scratch& s, int64_t first, int64_t rank, int64_t count, const float* correction) {
    using V = typename Vec::Type;
    const int64_t r_pad = padded(rank);
    for (int64_t i = 0; i < r_pad; i += kChunk) {
        V acc[R];
        for (int r = 0; r < R; ++r)
            acc[r] = Vec::mul(Vec::load(s.output + (first + r) * r_pad + i), Vec::set1(correction[r]));
        for (int64_t k = 0; k < count; ++k) {
            const V row = Vec::load(s.rows + k * r_pad + i);
            for (int r = 0; r < R; ++r) acc[r] = Vec::fma(Vec::set1(s.weights[r * kChunk + k]), row, acc[r]);
        }
        for (int r = 0; r < R; ++r) Vec::store(s.output + (first + r) * r_pad + i, acc[r]);
    }
}

template <typename Vec, int R>
void update_heads(const Scratch& s, int64_t first, int64_t width, int64_t rank, int64_t count, float scale) {
    float correction[R];
    score_heads<Vec, R>(s, first, width, count, scale, correction);
    accumulate_values<Vec, R>(s, first, rank, count, correction);
}

template <typename Vec>
void update_head_block(const Scratch& s, int64_t first, int64_t heads, int64_t width, int64_t rank, int64_t count,
                       float scale) {
    switch (std::min(heads - first, kHeadBlock)) {
        case 4: return update_heads<Vec, 4>(s, first, width, rank, count, scale);
        case 3: return update_heads<Vec, 3>(s, first, width, rank, count, scale);
        case 2: return update_heads<Vec, 2>(s, first, width, rank, count, scale);
        default: return update_heads<Vec, 1>(s, first, width, rank, count, scale);
    }
}

template <typename Vec>
void attend_latent_run(const float* queries, int64_t heads, const LatentCacheView& cache,
                       std::span<const int32_t> block_table, int64_t length, int64_t rank, float scale, float* scratch,
                       float* out) {
    const int64_t width = cache.width, w = padded(width), r_pad = padded(rank);
    const Scratch s = carve(scratch, heads, width, rank);
    for (int64_t h = 0; h < heads; ++h) {  // zeros past width meet the zeroed padding columns
        std::copy_n(queries + h * width, width, s.queries + h * w);
        std::fill(s.queries + h * w + width, s.queries + (h + 1) * w, 0.0f);
    }
    std::fill(s.columns + width * kChunk, s.columns + w * kChunk, 0.0f);
    std::fill_n(s.running_max, heads, -std::numeric_limits<float>::infinity());
    std::fill_n(s.denominator, heads, 0.0f);
    std::fill_n(s.output, heads * r_pad, 0.0f);
    for (int64_t base = 0; base < length; base += kChunk) {
        const int64_t count = std::min(kChunk, length - base);
        load_columns<Vec>(cache, block_table, base, count, s.columns);
        for (int64_t i = 0; i < r_pad; i += kChunk) Vec::transpose(s.columns + i * kChunk, kChunk, s.rows + i, r_pad);
        for (int64_t first = 0; first < heads; first += kHeadBlock)
            update_head_block<Vec>(s, first, heads, width, rank, count, scale);
    }
    for (int64_t h = 0; h < heads; ++h) {
        const float inverse = 1.0f / s.denominator[h];
        for (int64_t i = 0; i < rank; ++i) out[h * rank + i] = s.output[h * r_pad + i] * inverse;
    }
}

}  // namespace
}  // namespace tempered::latent_detail
