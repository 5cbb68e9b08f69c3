// Attention of multi-head latent attention (MLA, DeepSeek V2/V3) over its latent KV cache, in the
// absorbed form: every query head has already been projected into the latent space, so each position's
// key is the cached row itself, [latent (kv_lora_rank) | rope key (rope_dim)], shared by all heads (one
// KV head for the whole group, as in MQA), and its value is the latent part of the same row. A decode
// step thus reads latent_width elements per position and layer instead of per-head keys and values.
//
// The cache of one layer is KvCacheShape's key layout with one head of `width` elements: block b holds
// (width, block_size) elements, dimension-major, so a dimension of consecutive positions is contiguous.
// Elements are read only through load_latent_elements (one small case per element type); FP8 E4M3 is
// one of them, its per-position scale applied where positions are gathered (gather_latent_rows for the
// expanded form and the reference, the decode kernel's chunk gather).
#pragma once

#include <cstdint>
#include <span>

#include "core/dtype.h"
#include "kernels/cpu/dispatch.h"

namespace tempered {

struct LatentCacheView {
    const uint8_t* data = nullptr;  // block 0 of the layer
    int64_t block_stride = 0;       // bytes between consecutive blocks
    int64_t block_size = 0;         // positions per block
    int64_t width = 0;              // elements per position: kv_lora_rank + rope_dim
    DType type = DType::F16;
    // F8_E4M3 only: bytes from a block's start to its float scales, one per position (slot order); a
    // position's row is its codes times its scale (KvCacheShape::scale_offset(0, 0)).
    int64_t scale_offset = 0;
};

// out (count) = `count` consecutive cache elements of `type` at src, as float (exactly; F8_E4M3: the
// codes' values, before the position's scale).
void load_latent_elements(DType type, const uint8_t* src, int64_t count, float* out);

// rows (count, width) = positions [first, first + count) of the sequence with `block_table`, as float.
void gather_latent_rows(const LatentCacheView& cache, std::span<const int32_t> block_table, int64_t first,
                        int64_t count, float* rows);

// columns (width, lanes) = positions [first, first + count) as float, lane k of row d position first + k;
// lanes count .. lanes - 1 are zeros. For caches whose chunks may straddle blocks.
void gather_latent_columns(const LatentCacheView& cache, std::span<const int32_t> block_table, int64_t first,
                           int64_t count, int64_t lanes, float* columns);

// Floats of scratch attend_latent needs for `heads` query heads.
int64_t latent_attention_scratch_floats(int64_t heads, int64_t width, int64_t kv_lora_rank);

// For one query token at position length - 1: out (heads, kv_lora_rank) = softmax(scale * Q · R^T) · L,
// where Q (heads, width) are the absorbed queries [q_nope · W_kb | q_rope], R (length, width) the cached
// rows of positions [0, length) and L their first kv_lora_rank columns. Online softmax over chunks of
// positions, heads batched as a (heads x width) by (width x chunk) product. scratch: the calling
// thread's latent_attention_scratch_floats. The arithmetic is latent_attention_kernel.h's, the same bits
// for every instruction set; attend_latent runs the machine's, attend_latent_with_isa the one named.
void attend_latent(const float* queries, int64_t heads, const LatentCacheView& cache,
                   std::span<const int32_t> block_table, int64_t length, int64_t kv_lora_rank, float scale,
                   float* scratch, float* out);
void attend_latent_with_isa(const float* queries, int64_t heads, const LatentCacheView& cache,
                            std::span<const int32_t> block_table, int64_t length, int64_t kv_lora_rank, float scale,
                            float* scratch, float* out, CpuIsa isa);

// The instantiations (latent_attention_{scalar,avx2,avx512}.cpp); callers use attend_latent.
void attend_latent_scalar(const float* queries, int64_t heads, const LatentCacheView& cache,
                          std::span<const int32_t> block_table, int64_t length, int64_t kv_lora_rank, float scale,
                          float* scratch, float* out);
void attend_latent_avx2(const float* queries, int64_t heads, const LatentCacheView& cache,
                        std::span<const int32_t> block_table, int64_t length, int64_t kv_lora_rank, float scale,
                        float* scratch, float* out);
void attend_latent_avx512(const float* queries, int64_t heads, const LatentCacheView& cache,
                          std::span<const int32_t> block_table, int64_t length, int64_t kv_lora_rank, float scale,
                          float* scratch, float* out);

// The plain formula of attend_latent (gather every row, full softmax per head): the reference the
// chunked kernel is held to.
void attend_latent_reference(const float* queries, int64_t heads, const LatentCacheView& cache,
                             std::span<const int32_t> block_table, int64_t length, int64_t kv_lora_rank, float scale,
                             float* out);

}  // namespace tempered
