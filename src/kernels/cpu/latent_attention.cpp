#include "kernels/cpu/latent_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/half.h"
#include "kernels/cpu/fp8.h"
#include "kernels/cpu/latent_attention_kernel.h"
#include "kernels/cpu/ops.h"

namespace tempered {
using latent_detail::kChunk;  // gather_latent_rows gathers as many positions at a time as the kernel
namespace {

// The float scale of each of `count` FP8 positions, stored at scales (count floats, unaligned).
float stored_scale(const uint8_t* scales, int64_t k) {
    float scale;
    std::memcpy(&scale, scales + k * 4, sizeof scale);
    return scale;
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

// Chunk by chunk through gather_latent_columns, transposed: the same floats the kernel's gather makes.
void gather_latent_rows(const LatentCacheView& cache, std::span<const int32_t> block_table, int64_t first,
                        int64_t count, float* rows) {
    std::vector<float> columns(static_cast<size_t>(cache.width * kChunk));
    for (int64_t p = 0; p < count; p += kChunk) {
        const int64_t n = std::min(kChunk, count - p);
        gather_latent_columns(cache, block_table, first + p, n, kChunk, columns.data());
        for (int64_t k = 0; k < n; ++k)
            for (int64_t d = 0; d < cache.width; ++d)
                rows[(p + k) * cache.width + d] = columns[static_cast<size_t>(d * kChunk + k)];
    }
}

void gather_latent_columns(const LatentCacheView& cache, std::span<const int32_t> block_table, int64_t first,
                           int64_t count, int64_t lanes, float* columns) {
    const auto element = static_cast<int64_t>(dtype_traits(cache.type).block_bytes);
    if (count < lanes) std::fill_n(columns, cache.width * lanes, 0.0f);
    for (int64_t p = first; p < first + count;) {
        const int64_t slot = p % cache.block_size, lane = p - first;
        const int64_t run = std::min(count - lane, cache.block_size - slot);
        const uint8_t* block =
            cache.data +
            static_cast<int64_t>(block_table[static_cast<size_t>(p / cache.block_size)]) * cache.block_stride;
        for (int64_t d = 0; d < cache.width; ++d)
            load_latent_elements(cache.type, block + (d * cache.block_size + slot) * element, run,
                                 columns + d * lanes + lane);
        if (cache.type == DType::F8_E4M3) {  // codes times each position's scale
            const uint8_t* scales = block + cache.scale_offset + slot * 4;
            for (int64_t k = 0; k < run; ++k) {
                const float scale = stored_scale(scales, k);
                for (int64_t d = 0; d < cache.width; ++d) columns[d * lanes + lane + k] *= scale;
            }
        }
        p += run;
    }
}

int64_t latent_attention_scratch_floats(int64_t heads, int64_t width, int64_t kv_lora_rank) {
    return latent_detail::scratch_floats(heads, width, kv_lora_rank);
}

void attend_latent_with_isa(const float* queries, int64_t heads, const LatentCacheView& cache,
                            std::span<const int32_t> block_table, int64_t length, int64_t kv_lora_rank, float scale,
                            float* scratch, float* out, CpuIsa isa) {
    switch (isa) {
        case CpuIsa::Avx512:
            return attend_latent_avx512(queries, heads, cache, block_table, length, kv_lora_rank, scale, scratch, out);
        case CpuIsa::Avx2:
            return attend_latent_avx2(queries, heads, cache, block_table, length, kv_lora_rank, scale, scratch, out);
        case CpuIsa::Scalar: break;
    }
    attend_latent_scalar(queries, heads, cache, block_table, length, kv_lora_rank, scale, scratch, out);
}

void attend_latent(const float* queries, int64_t heads, const LatentCacheView& cache,
                   std::span<const int32_t> block_table, int64_t length, int64_t kv_lora_rank, float scale,
                   float* scratch, float* out) {
    attend_latent_with_isa(queries, heads, cache, block_table, length, kv_lora_rank, scale, scratch, out,
                           active_cpu_isa());
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
