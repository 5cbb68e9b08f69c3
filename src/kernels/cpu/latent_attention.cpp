#include "kernels/cpu/latent_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/half.h"
#include "kernels/cpu/fp8.h"
#include "kernels/cpu/ops.h"

namespace tempered {
namespace {

constexpr int64_t kChunk = 16;  // positions gathered and scored together

// Per-thread scratch of attend_latent, carved from the caller's floats.
struct LatentScratch {
    float* columns;      // (width, kChunk): dimension d of the chunk's positions, as the cache stores them
    float* rows;         // (kChunk, width): the same chunk position by position, for the value sums
    float* scores;       // (heads, kChunk)
    float* running_max;  // (heads)
    float* denominator;  // (heads)
};

LatentScratch carve(float* scratch, int64_t heads, int64_t width) {
    LatentScratch s;
    s.columns = scratch;
    s.rows = s.columns + kChunk * width;
    s.scores = s.rows + kChunk * width;
    s.running_max = s.scores + heads * kChunk;
    s.denominator = s.running_max + heads;
    return s;
}

// The float scale of each of `count` FP8 positions, stored at scales (count floats, unaligned).
float stored_scale(const uint8_t* scales, int64_t k) {
    float scale;
    std::memcpy(&scale, scales + k * 4, sizeof scale);
    return scale;
}

// columns (width, kChunk) and rows (count, width) = positions [first, first + count) as float; lanes past
// `count` of the columns are zero. The cache keeps a dimension of consecutive slots together, so the
// columns are straight conversions and the rows their transpose.
void gather_latent_chunk(const LatentCacheView& cache, std::span<const int32_t> block_table, int64_t first,
                         int64_t count, float* columns, float* rows) {
    const auto element = static_cast<int64_t>(dtype_traits(cache.type).block_bytes);
    if (count < kChunk) std::fill_n(columns, cache.width * kChunk, 0.0f);
    for (int64_t p = first; p < first + count;) {
        const int64_t slot = p % cache.block_size, lane = p - first;
        const int64_t run = std::min(count - lane, cache.block_size - slot);
        const uint8_t* block =
            cache.data +
            static_cast<int64_t>(block_table[static_cast<size_t>(p / cache.block_size)]) * cache.block_stride;
        for (int64_t d = 0; d < cache.width; ++d)
            load_latent_elements(cache.type, block + (d * cache.block_size + slot) * element, run,
                                 columns + d * kChunk + lane);
        if (cache.type == DType::F8_E4M3) {  // codes times each position's scale
            const uint8_t* scales = block + cache.scale_offset + slot * 4;
            for (int64_t k = 0; k < run; ++k) {
                const float scale = stored_scale(scales, k);
                for (int64_t d = 0; d < cache.width; ++d) columns[d * kChunk + lane + k] *= scale;
            }
        }
        p += run;
    }
    for (int64_t d = 0; d < cache.width; ++d)
        for (int64_t k = 0; k < count; ++k) rows[k * cache.width + d] = columns[d * kChunk + k];
}

// scores (kChunk) = scale * query · column k for every lane: one multiply-add of a whole chunk per
// dimension, so the lanes are independent sums (vectorisable) instead of one dot product per position.
void score_chunk(const float* query, const float* columns, int64_t width, float scale, float* scores) {
    float sums[kChunk] = {};
    for (int64_t d = 0; d < width; ++d) {
        const float q = query[d];
        const float* column = columns + d * kChunk;
        for (int64_t k = 0; k < kChunk; ++k) sums[k] += q * column[k];
    }
    for (int64_t k = 0; k < kChunk; ++k) scores[k] = scale * sums[k];
}

// rows (count, width) *= the float scale of each row, stored at scales (count floats, unaligned).
void scale_rows(const uint8_t* scales, int64_t count, int64_t width, float* rows) {
    for (int64_t k = 0; k < count; ++k) {
        const float scale = stored_scale(scales, k);
        for (int64_t d = 0; d < width; ++d) rows[k * width + d] *= scale;
    }
}

}  // namespace

void load_latent_elements(DType type, const uint8_t* src, int64_t count, float* out) {
    switch (type) {
        case DType::F32: std::copy_n(reinterpret_cast<const float*>(src), count, out); return;
        case DType::F16: kv_to_float(type, src, out, count); return;  // a table look-up per element
        case DType::BF16:
            for (int64_t i = 0; i < count; ++i) out[i] = bf16_to_float(reinterpret_cast<const uint16_t*>(src)[i]);
            return;
        case DType::F8_E4M3: e4m3_to_floats(src, out, count); return;
        default: std::fill_n(out, count, std::numeric_limits<float>::quiet_NaN()); return;  // refused at load
    }
}

void gather_latent_rows(const LatentCacheView& cache, std::span<const int32_t> block_table, int64_t first,
                        int64_t count, float* rows) {
    const auto element = static_cast<int64_t>(dtype_traits(cache.type).block_bytes);
    float column[kChunk];
    for (int64_t p = first; p < first + count;) {
        const int64_t slot = p % cache.block_size;
        const int64_t run = std::min({count - (p - first), cache.block_size - slot, kChunk});
        const uint8_t* block =
            cache.data +
            static_cast<int64_t>(block_table[static_cast<size_t>(p / cache.block_size)]) * cache.block_stride;
        float* out = rows + (p - first) * cache.width;
        for (int64_t d = 0; d < cache.width; ++d) {
            load_latent_elements(cache.type, block + (d * cache.block_size + slot) * element, run, column);
            for (int64_t k = 0; k < run; ++k) out[k * cache.width + d] = column[k];
        }
        if (cache.type == DType::F8_E4M3) scale_rows(block + cache.scale_offset + slot * 4, run, cache.width, out);
        p += run;
    }
}

int64_t latent_attention_scratch_floats(int64_t heads, int64_t width) {
    return 2 * kChunk * width + heads * kChunk + 2 * heads;
}

void attend_latent(const float* queries, int64_t heads, const LatentCacheView& cache,
                   std::span<const int32_t> block_table, int64_t length, int64_t kv_lora_rank, float scale,
                   float* scratch, float* out) {
    const int64_t width = cache.width;
    const LatentScratch s = carve(scratch, heads, width);
    std::fill_n(s.running_max, heads, -std::numeric_limits<float>::infinity());
    std::fill_n(s.denominator, heads, 0.0f);
    std::fill_n(out, heads * kv_lora_rank, 0.0f);
    for (int64_t base = 0; base < length; base += kChunk) {
        const int64_t count = std::min(kChunk, length - base);
        gather_latent_chunk(cache, block_table, base, count, s.columns, s.rows);
        for (int64_t h = 0; h < heads; ++h) {
            float* scores = s.scores + h * kChunk;
            score_chunk(queries + h * width, s.columns, width, scale, scores);
            float chunk_max = -std::numeric_limits<float>::infinity();
            for (int64_t k = 0; k < count; ++k) chunk_max = std::max(chunk_max, scores[k]);
            const float new_max = std::max(s.running_max[h], chunk_max);
            const float correction = std::exp(s.running_max[h] - new_max);  // 0 on the first chunk
            float sum = 0.0f;
            for (int64_t k = 0; k < count; ++k) {
                scores[k] = std::exp(scores[k] - new_max);
                sum += scores[k];
            }
            s.running_max[h] = new_max;
            s.denominator[h] = s.denominator[h] * correction + sum;
            float* o = out + h * kv_lora_rank;
            for (int64_t i = 0; i < kv_lora_rank; ++i) o[i] *= correction;
            for (int64_t k = 0; k < count; ++k) {
                const float weight = scores[k];
                const float* latent = s.rows + k * width;
                for (int64_t i = 0; i < kv_lora_rank; ++i) o[i] += weight * latent[i];
            }
        }
    }
    for (int64_t h = 0; h < heads; ++h) {
        const float inverse = 1.0f / s.denominator[h];
        for (int64_t i = 0; i < kv_lora_rank; ++i) out[h * kv_lora_rank + i] *= inverse;
    }
}

void attend_latent_reference(const float* queries, int64_t heads, const LatentCacheView& cache,
                             std::span<const int32_t> block_table, int64_t length, int64_t kv_lora_rank, float scale,
                             float* out) {
    std::vector<float> rows(static_cast<size_t>(length * cache.width));
    gather_latent_rows(cache, block_table, 0, length, rows.data());
    std::vector<double> weights(static_cast<size_t>(length));
    for (int64_t h = 0; h < heads; ++h) {
        double max_score = -std::numeric_limits<double>::infinity(), sum = 0.0;
        for (int64_t p = 0; p < length; ++p) {
            double score = 0.0;
            for (int64_t d = 0; d < cache.width; ++d)
                score +=
                    static_cast<double>(queries[h * cache.width + d]) * rows[static_cast<size_t>(p * cache.width + d)];
            weights[static_cast<size_t>(p)] = score * scale;
            max_score = std::max(max_score, score * scale);
        }
        for (double& w : weights) sum += (w = std::exp(w - max_score));
        for (int64_t i = 0; i < kv_lora_rank; ++i) {
            double value = 0.0;
            for (int64_t p = 0; p < length; ++p)
                value += weights[static_cast<size_t>(p)] * rows[static_cast<size_t>(p * cache.width + i)];
            out[h * kv_lora_rank + i] = static_cast<float>(value / sum);
        }
    }
}

}  // namespace tempered
