// The small float kernels of a transformer block: normalisation, rotary embedding, softmax, gated
// activations and grouped-query attention over a paged KV cache. Plain scalar code; the matmuls around
// them dominate the time, so these stay readable. Every kernel is tested against the formula it implements
// (tests/unit/ops_test.cpp).
#pragma once

#include <cstdint>
#include <span>

#include "core/dtype.h"

namespace tempered {

// y (n) = x / sqrt(mean(x^2) + epsilon) * weight. y may alias x.
void rmsnorm(const float* x, const float* weight, float* y, int64_t n, float epsilon);

// rmsnorm() of each of `count` consecutive vectors of n floats of x, in place, all with the same weight (n):
// the per-head query and key norms of Qwen3 and Gemma 3, applied to a token's heads side by side.
void rmsnorm_each(float* x, int64_t count, const float* weight, int64_t n, float epsilon);

// Which elements a rotary embedding rotates together as pair i of rotary_dims/2 pairs.
enum class RotaryPairing {
    AdjacentElements,  // (x[2i], x[2i+1])
    HalvesApart,       // (x[i], x[i + rotary_dims/2])
};

// Rotates the first rotary_dims elements of one head vector x (head_dim) in place, pair i by the angle
// position * inverse_frequencies[i] (inverse_frequencies: rotary_dims/2 values).
void rope(float* x, int64_t rotary_dims, float position, const float* inverse_frequencies, RotaryPairing pairing);

// rope() in two steps, so that a token's angles are computed once for all its heads and layers:
// cos_angles[i], sin_angles[i] of pair i's angle (pairs values each), then the rotation.
void rope_angles(float position, const float* inverse_frequencies, int64_t pairs, float* cos_angles, float* sin_angles);
void rope_rotate(float* x, int64_t rotary_dims, const float* cos_angles, const float* sin_angles,
                 RotaryPairing pairing);

// x (n) = softmax(x), in place; max-subtracted, so large logits do not overflow.
void softmax(float* x, int64_t n);

// out (n) = silu(gate) * up = gate / (1 + exp(-gate)) * up, the SwiGLU feed-forward activation, with
// fast_exp.h's canonical_exp. out may alias gate or up. Vectorised where the CPU allows; the same bits.
void swiglu(const float* gate, const float* up, float* out, int64_t n);
void swiglu_scalar(const float* gate, const float* up, float* out, int64_t n);

// out (n) = silu_alpha(min(gate, limit)) * (clamp(up, -limit, limit) + 1), where silu_alpha(x) = x / (1 +
// exp(-alpha x)): gpt-oss's clamped SwiGLU (alpha 1.702, limit 7), with fast_exp.h's canonical_exp. out may
// alias gate or up. Vectorised where the CPU allows; the same bits.
void swiglu_clamped(const float* gate, const float* up, float* out, int64_t n, float alpha, float limit);
void swiglu_clamped_scalar(const float* gate, const float* up, float* out, int64_t n, float alpha, float limit);

// out (n) = gelu(gate) * up, the GeGLU feed-forward activation (Gemma), with GELU's tanh approximation
// gelu(x) = x / 2 * (1 + tanh(u)), u = sqrt(2 / pi) * (x + 0.044715 x^3), computed as the equal
// x / (1 + exp(-2u)) with fast_exp.h's canonical_exp. out may alias gate or up. Vectorised where the
// CPU allows; the same bits.
void geglu_tanh(const float* gate, const float* up, float* out, int64_t n);
void geglu_tanh_scalar(const float* gate, const float* up, float* out, int64_t n);

// out (n) = canonical_exp((x - subtract) * multiply) (fast_exp.h), e.g. a sampler's weights
// exp((logit - best) / T). out may alias x. Vectorised where the CPU allows; the same bits.
void exp_of_scaled_difference(const float* x, float subtract, float multiply, float* out, int64_t n);
void exp_of_scaled_difference_scalar(const float* x, float subtract, float multiply, float* out, int64_t n);

// dst (n) = src (n) of a KV storage type (F32, F16, BF16, or F8_E4M3's codes, unscaled); other types
// are a caller bug.
void kv_to_float(DType type, const void* src, float* dst, int64_t n);
// dst (n) of a KV storage type = src (n), rounded to nearest even (F16C where the CPU has it).
void float_to_kv(DType type, const float* src, void* dst, int64_t n);

// Keys and values of one layer of a paged KV cache, seen from one KV head (layout: KvCacheShape in
// kv/kv_cache.h). For the position in slot s of block b, element d of the key is at
// keys + b * block_stride + (d * block_size + s) * element bytes (keys are transposed in a block), and
// the value starts at values + b * block_stride + s * slot_stride.
struct KvHeadView {
    const uint8_t* keys = nullptr;
    const uint8_t* values = nullptr;
    int64_t block_stride = 0;  // bytes between consecutive blocks
    int64_t slot_stride = 0;   // bytes between consecutive values of a block
    int64_t block_size = 0;    // slots per block
    DType type = DType::F16;
    // F8_E4M3 only (KvCacheShape::scale_offset): the float scale of the key in slot s of block b is at
    // key_scales + b * block_stride + s * 4, and an element reads as its code's value times that scale;
    // likewise value_scales.
    const uint8_t* key_scales = nullptr;
    const uint8_t* value_scales = nullptr;

    int64_t element_bytes() const { return static_cast<int64_t>(dtype_traits(type).block_bytes); }
};

// The key of slot `slot` of block `block` (head_dim elements), as float (scaled, for F8_E4M3).
void gather_key(const KvHeadView& kv, int64_t block, int64_t slot, int64_t head_dim, float* out);
// The value of slot `slot` of block `block` likewise.
void read_value(const KvHeadView& kv, int64_t block, int64_t slot, int64_t head_dim, float* out);

// For each of `heads` query heads sharing one KV head (a GQA group):
// out[h] (head_dim) = softmax(scale * q[h] · K^T) · V over positions [0, length) of one sequence, whose
// position p lives in slot p % block_size of block block_table[p / block_size]; with a window W > 0 over
// the last W of them only, [max(0, length - W), length), and no other position or table entry is read.
// Each cached key and value is converted to float once for the whole group.
// q, out: (heads, head_dim); scratch: at least heads * length + (heads + 1) * head_dim floats, owned by
// the calling thread.
void attend_heads(const float* q, int64_t heads, int64_t head_dim, const KvHeadView& kv,
                  std::span<const int32_t> block_table, int64_t length, int64_t window, float scale, float* scratch,
                  float* out);

}  // namespace tempered
