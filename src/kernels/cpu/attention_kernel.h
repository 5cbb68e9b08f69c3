// The attention arithmetic of attention.h, written once over a vector type of 16 floats. `Vec`
// provides: zero, set1, load, store, load_kv<type> (16 cache elements as floats, exactly), load_e4m3
// (16 FP8 codes as floats, exactly, as fp8.h's e4m3_to_float), add, sub,
// mul, fma (a * b + c, one rounding), max, hmax, hsum
// (((v[i] + v[i+8]) then + [i+4], + [i+2], + [i+1]: one fixed order), keep_first (lanes >= count set
// to a fill value), drop_first (lanes < count set to a fill value), exp (fast_exp.h's canonical_exp,
// lane by lane) and kv_to_float (exact, as ops.h's). Only headers; included by attention_scalar.cpp,
// attention_avx2.cpp and attention_avx512.cpp, each with its own Vec.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "core/half.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/fast_exp.h"

namespace tempered::attention_detail {
// Internal linkage: each file compiled for its own instruction set keeps its own copies, so the linker never
// merges a helper compiled with AVX-512 into the scalar path (as it may with inline functions at -O0).
namespace {

inline constexpr int kChunk = 16;    // positions per key/value chunk: one vector of scores
inline constexpr int kRowBlock = 4;  // query rows updated together: independent chains, shared loads

// Per-thread scratch, carved from the caller's floats.
struct Scratch {
    float* keys_transposed;  // (head_dim, kChunk): lane k of row d is element d of key k
    float* values;           // (kChunk, head_dim)
    float* weights;          // (kRowBlock, kChunk): the attention weights of a row block over the chunk
    float* running_max;      // (rows)
    float* denominator;      // (rows)
    float* output;           // (rows, head_dim): unnormalised
};

inline int64_t scratch_floats(int64_t rows, int64_t head_dim) {
    return 2 * kChunk * head_dim + kRowBlock * kChunk + rows * (head_dim + 2);
}

inline Scratch carve(float* scratch, int64_t rows, int64_t head_dim) {
    Scratch s;
    s.keys_transposed = scratch;
    s.values = s.keys_transposed + kChunk * head_dim;
    s.weights = s.values + kChunk * head_dim;
    s.running_max = s.weights + kRowBlock * kChunk;
    s.denominator = s.running_max + rows;
    s.output = s.denominator + rows;
    return s;
}

// Where update_rows reads one chunk: dimension d of the chunk's 16 keys is 16 consecutive elements of
// `type` at keys + d * key_stride, and position k's value row starts at values + k * value_stride.
struct ChunkView {
    const uint8_t* keys;
    int64_t key_stride;
    const uint8_t* values;
    int64_t value_stride;
};

// The chunk straight from the cache, when it lies in one block (block_size a multiple of 16): the
// block's keys are transposed, so each dimension already is 16 consecutive slots. Lanes past the
// sequence's end hold whatever the block held: their scores are masked and their values never read.
inline ChunkView cache_chunk(const KvHeadView& kv, std::span<const int32_t> block_table, int64_t base) {
    const int64_t element = kv.element_bytes(), slot = base % kv.block_size;
    const int64_t block = block_table[static_cast<size_t>(base / kv.block_size)] * kv.block_stride;
    return ChunkView{kv.keys + block + slot * element, kv.block_size * element,
                     kv.values + block + slot * kv.slot_stride, kv.slot_stride};
}

// The chunk converted once into the scratch as float32, for runs with more rows than one row block
// (prefill): each row block would otherwise convert the same keys and values again.
template <typename Vec, DType kType>
ChunkView converted_chunk(const ChunkView& chunk, int64_t count, int64_t head_dim, const Scratch& s) {
    constexpr int64_t kElement = kType == DType::F32 ? 4 : 2;
    for (int64_t d = 0; d < head_dim; ++d)
        Vec::store(s.keys_transposed + d * kChunk, Vec::template load_kv<kType>(chunk.keys + d * chunk.key_stride));
    for (int64_t k = 0; k < count; ++k)
        for (int64_t d = 0; d < head_dim; d += kChunk)
            Vec::store(s.values + k * head_dim + d,
                       Vec::template load_kv<kType>(chunk.values + k * chunk.value_stride + d * kElement));
    return ChunkView{reinterpret_cast<const uint8_t*>(s.keys_transposed), kChunk * 4,
                     reinterpret_cast<const uint8_t*>(s.values), head_dim * 4};
}

// An F8_E4M3 chunk lying in one block, dequantized into the scratch: each element is its code's value
// times its position's scale (one rounding, the same in every ISA and as gather_key / read_value), so
// every run, whatever its rows, sees the same floats.
template <typename Vec>
ChunkView dequantized_chunk(const KvHeadView& kv, std::span<const int32_t> block_table, int64_t base, int64_t count,
                            int64_t head_dim, const Scratch& s) {
    const ChunkView chunk = cache_chunk(kv, block_table, base);
    const int64_t scales =
        block_table[static_cast<size_t>(base / kv.block_size)] * kv.block_stride + (base % kv.block_size) * 4;
    float key_scales[kChunk], value_scales[kChunk];  // lanes past the sequence's end: masked, never read
    std::memcpy(key_scales, kv.key_scales + scales, sizeof key_scales);
    std::memcpy(value_scales, kv.value_scales + scales, sizeof value_scales);
    const auto key_scale = Vec::load(key_scales);
    for (int64_t d = 0; d < head_dim; ++d)
        Vec::store(s.keys_transposed + d * kChunk,
                   Vec::mul(Vec::load_e4m3(chunk.keys + d * chunk.key_stride), key_scale));
    for (int64_t k = 0; k < count; ++k)
        for (int64_t d = 0; d < head_dim; d += kChunk)
            Vec::store(s.values + k * head_dim + d,
                       Vec::mul(Vec::load_e4m3(chunk.values + k * chunk.value_stride + d), Vec::set1(value_scales[k])));
    return ChunkView{reinterpret_cast<const uint8_t*>(s.keys_transposed), kChunk * 4,
                     reinterpret_cast<const uint8_t*>(s.values), head_dim * 4};
}

// Otherwise positions [base + skip, base + count) gathered into the scratch as float32; the first `skip`
// lanes, before every window of the run, are zeros (their blocks may be gone).
inline ChunkView gathered_chunk(const KvHeadView& kv, std::span<const int32_t> block_table, int64_t base, int64_t skip,
                                int64_t count, int64_t head_dim, const Scratch& s) {
    float key[512];  // head_dim <= 512 (attention_run_supports)
    for (int64_t k = 0; k < skip; ++k) {
        for (int64_t d = 0; d < head_dim; ++d) s.keys_transposed[d * kChunk + k] = 0.0f;
        std::fill(s.values + k * head_dim, s.values + (k + 1) * head_dim, 0.0f);
    }
    for (int64_t k = skip; k < count; ++k) {
        const int64_t position = base + k;
        const int64_t block = block_table[static_cast<size_t>(position / kv.block_size)];
        gather_key(kv, block, position % kv.block_size, head_dim, key);
        for (int64_t d = 0; d < head_dim; ++d) s.keys_transposed[d * kChunk + k] = key[d];
        read_value(kv, block, position % kv.block_size, head_dim, s.values + k * head_dim);
    }
    return ChunkView{reinterpret_cast<const uint8_t*>(s.keys_transposed), kChunk * 4,
                     reinterpret_cast<const uint8_t*>(s.values), head_dim * 4};
}

// Asks the memory system for the keys and values of positions [base, base + count) while the current
// chunk is computed: a decoding sequence's blocks are scattered, so the hardware prefetcher cannot
// guess them, and without this attention waits on memory.
inline void prefetch_chunk(const KvHeadView& kv, std::span<const int32_t> block_table, int64_t base, int64_t count,
                           int64_t head_dim) {
    const int64_t element = kv.element_bytes();
    for (int64_t k = 0; k < count; ++k) {
        const int64_t position = base + k;
        const int64_t block = block_table[static_cast<size_t>(position / kv.block_size)];
        const auto* value = reinterpret_cast<const char*>(kv.values + block * kv.block_stride +
                                                          (position % kv.block_size) * kv.slot_stride);
        for (int64_t line = 0; line < head_dim * element; line += 64) __builtin_prefetch(value + line);
        if (k % kChunk != 0 && kv.block_size % kChunk == 0) continue;
        // Keys: one line holds 32 (f16) consecutive slots of a dimension, so touch each dimension once
        // per chunk.
        const auto* keys =
            reinterpret_cast<const char*>(kv.keys + block * kv.block_stride + (position % kv.block_size) * element);
        for (int64_t d = 0; d < head_dim; ++d) __builtin_prefetch(keys + d * kv.block_size * element);
    }
}

// One query row of a run, as the row block update sees it.
struct RowRef {
    const float* q;   // (head_dim)
    int64_t row;      // index into the scratch's per-row state
    int64_t visible;  // causal positions of the chunk this row sees: 1 .. kChunk
    int64_t hidden;   // of those, the first ones before the row's window: 0 .. visible - 1 (0 without a window)
};

// R query rows against one chunk (online softmax). Per row, the arithmetic never depends on R or on
// the other rows: scores are four fma chains over d (d mod 4) added as (c0 + c1) + (c2 + c3), times
// scale; the output takes the weighted values in position order.
template <typename Vec, DType kType, int R>
void update_rows(const RowRef* rows, int64_t head_dim, float scale, const Scratch& s, const ChunkView& chunk) {
    using V = typename Vec::Type;
    constexpr int64_t kElement = kType == DType::F32 ? 4 : 2;
    V chains[R][4];
    for (auto& row_chains : chains)
        for (auto& chain : row_chains) chain = Vec::zero();
    for (int64_t d = 0; d < head_dim; d += 4) {
        for (int c = 0; c < 4; ++c) {
            const V key = Vec::template load_kv<kType>(chunk.keys + (d + c) * chunk.key_stride);
            for (int r = 0; r < R; ++r) chains[r][c] = Vec::fma(Vec::set1(rows[r].q[d + c]), key, chains[r][c]);
        }
    }
    const float negative_infinity = -std::numeric_limits<float>::infinity();
    float correction[R];
    int64_t most_visible = 0, least_hidden = kChunk;
    for (int r = 0; r < R; ++r) {
        const RowRef& row = rows[r];
        const V sum = Vec::add(Vec::add(chains[r][0], chains[r][1]), Vec::add(chains[r][2], chains[r][3]));
        V scores = Vec::keep_first(Vec::mul(sum, Vec::set1(scale)), row.visible, negative_infinity);
        if (row.hidden > 0) scores = Vec::drop_first(scores, row.hidden, negative_infinity);
        const float old_max = s.running_max[row.row];
        const float new_max = std::max(old_max, Vec::hmax(scores));
        correction[r] = canonical_exp(old_max - new_max);
        V weights = Vec::keep_first(Vec::exp(Vec::sub(scores, Vec::set1(new_max))), row.visible, 0.0f);
        if (row.hidden > 0) weights = Vec::drop_first(weights, row.hidden, 0.0f);
        s.running_max[row.row] = new_max;
        s.denominator[row.row] = std::fma(s.denominator[row.row], correction[r], Vec::hsum(weights));
        Vec::store(s.weights + r * kChunk, weights);
        most_visible = std::max(most_visible, row.visible);
        least_hidden = std::min(least_hidden, row.hidden);
    }
    for (int64_t d = 0; d < head_dim; d += kChunk) {
        V acc[R];
        for (int r = 0; r < R; ++r)
            acc[r] = Vec::mul(Vec::load(s.output + rows[r].row * head_dim + d), Vec::set1(correction[r]));
        for (int64_t k = least_hidden; k < most_visible; ++k) {
            const V value = Vec::template load_kv<kType>(chunk.values + k * chunk.value_stride + d * kElement);
            for (int r = 0; r < R; ++r)
                if (k >= rows[r].hidden && k < rows[r].visible)
                    acc[r] = Vec::fma(Vec::set1(s.weights[r * kChunk + k]), value, acc[r]);
        }
        for (int r = 0; r < R; ++r) Vec::store(s.output + rows[r].row * head_dim + d, acc[r]);
    }
}

template <typename Vec, DType kType>
void update_row_block(const RowRef* rows, int count, int64_t head_dim, float scale, const Scratch& s,
                      const ChunkView& chunk) {
    switch (count) {
        case 4: return update_rows<Vec, kType, 4>(rows, head_dim, scale, s, chunk);
        case 3: return update_rows<Vec, kType, 3>(rows, head_dim, scale, s, chunk);
        case 2: return update_rows<Vec, kType, 2>(rows, head_dim, scale, s, chunk);
        default: return update_rows<Vec, kType, 1>(rows, head_dim, scale, s, chunk);
    }
}

// The first position the token at `position` sees.
inline int64_t window_start(const AttentionRun& run, int64_t position) {
    return run.window > 0 ? std::max<int64_t>(0, position - run.window + 1) : 0;
}

// Every row of the run that sees part of the chunk at `base`, four at a time.
template <typename Vec, DType kType>
void attend_chunk(const AttentionRun& run, int64_t base, float scale, const Scratch& s, const ChunkView& chunk) {
    RowRef block[kRowBlock];
    int filled = 0;
    for (int64_t t = 0; t < run.tokens; ++t) {
        const int64_t position = run.first_position + t;
        const int64_t visible = std::min<int64_t>(kChunk, position + 1 - base);
        if (visible <= 0) continue;  // this chunk is wholly in the token's future
        const int64_t hidden = std::max<int64_t>(0, window_start(run, position) - base);
        if (hidden >= kChunk) continue;  // or wholly before its window
        for (int64_t h = 0; h < run.heads; ++h) {
            block[filled++] =
                RowRef{run.q + t * run.token_stride + h * run.head_dim, t * run.heads + h, visible, hidden};
            if (filled == kRowBlock) {
                update_row_block<Vec, kType>(block, filled, run.head_dim, scale, s, chunk);
                filled = 0;
            }
        }
    }
    if (filled > 0) update_row_block<Vec, kType>(block, filled, run.head_dim, scale, s, chunk);
}

// What a row's unnormalised output is multiplied by: 1 / denominator, or with a sink σ the softmax over the
// positions and σ together, its maximum M = max(running max m, σ): exp(m - M) / (denominator exp(m - M) +
// exp(σ - M)). Scalar arithmetic shared by every ISA, so the three stay equal bit for bit.
inline float output_factor(const AttentionRun& run, int64_t head, const Scratch& s, int64_t row) {
    if (run.sinks == nullptr) return 1.0f / s.denominator[row];
    const float sink = run.sinks[head], running_max = s.running_max[row];
    const float joint_max = std::max(running_max, sink);
    const float rescale = canonical_exp(running_max - joint_max);
    return rescale / std::fma(s.denominator[row], rescale, canonical_exp(sink - joint_max));
}

template <typename Vec>
void attend_run(const AttentionRun& run, const KvHeadView& kv, std::span<const int32_t> block_table, float scale,
                float* scratch) {
    const int64_t rows = run.tokens * run.heads, head_dim = run.head_dim;
    const Scratch s = carve(scratch, rows, head_dim);
    std::fill(s.running_max, s.running_max + rows, -std::numeric_limits<float>::infinity());
    std::fill(s.denominator, s.denominator + rows, 0.0f);
    std::fill(s.output, s.output + rows * head_dim, 0.0f);
    const int64_t length = run.first_position + run.tokens;       // positions the last token sees
    const int64_t start = window_start(run, run.first_position);  // the first position any token sees
    const int64_t first_base = start / kChunk * kChunk;
    prefetch_chunk(kv, block_table, start, std::min<int64_t>(first_base + kChunk, length) - start, head_dim);
    for (int64_t base = first_base; base < length; base += kChunk) {
        if (base + kChunk < length)
            prefetch_chunk(kv, block_table, base + kChunk, std::min<int64_t>(kChunk, length - base - kChunk), head_dim);
        if (kv.block_size % kChunk != 0) {
            const int64_t count = std::min<int64_t>(kChunk, length - base);
            const int64_t skip = std::max<int64_t>(0, start - base);
            attend_chunk<Vec, DType::F32>(run, base, scale, s,
                                          gathered_chunk(kv, block_table, base, skip, count, head_dim, s));
            continue;
        }
        if (kv.type == DType::F8_E4M3) {  // always dequantized first: the scales multiply every element
            const int64_t count = std::min<int64_t>(kChunk, length - base);
            attend_chunk<Vec, DType::F32>(run, base, scale, s,
                                          dequantized_chunk<Vec>(kv, block_table, base, count, head_dim, s));
            continue;
        }
        const ChunkView chunk = cache_chunk(kv, block_table, base);
        if (rows > kRowBlock) {
            const int64_t count = std::min<int64_t>(kChunk, length - base);
            ChunkView converted;
            switch (kv.type) {
                case DType::F16: converted = converted_chunk<Vec, DType::F16>(chunk, count, head_dim, s); break;
                case DType::BF16: converted = converted_chunk<Vec, DType::BF16>(chunk, count, head_dim, s); break;
                default: converted = converted_chunk<Vec, DType::F32>(chunk, count, head_dim, s); break;
            }
            attend_chunk<Vec, DType::F32>(run, base, scale, s, converted);
            continue;
        }
        switch (kv.type) {
            case DType::F16: attend_chunk<Vec, DType::F16>(run, base, scale, s, chunk); break;
            case DType::BF16: attend_chunk<Vec, DType::BF16>(run, base, scale, s, chunk); break;
            default: attend_chunk<Vec, DType::F32>(run, base, scale, s, chunk); break;
        }
    }
    for (int64_t t = 0; t < run.tokens; ++t) {
        for (int64_t h = 0; h < run.heads; ++h) {
            const int64_t row = t * run.heads + h;
            const typename Vec::Type inverse = Vec::set1(output_factor(run, h, s, row));
            float* out = run.out + t * run.token_stride + h * head_dim;
            for (int64_t d = 0; d < head_dim; d += kChunk)
                Vec::store(out + d, Vec::mul(Vec::load(s.output + row * head_dim + d), inverse));
        }
    }
}

}  // namespace
}  // namespace tempered::attention_detail
