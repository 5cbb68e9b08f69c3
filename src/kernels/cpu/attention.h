// Causal grouped-query attention of a run of query tokens over a paged KV cache, flash-attention style:
// keys and values are read 16 positions at a time, converted to float once for every query of the run,
// and each query keeps a running max, denominator and output (online softmax). A prefill of n tokens
// thus reads its keys about n / kMaxRunTokens times instead of n times.
//
// The arithmetic is defined once (attention_kernel.h) over a 16-lane vector type, and instantiated
// for scalar code, AVX2 and AVX-512: the three agree bit for bit (tests/unit/attention_test.cpp), and
// the scalar one agrees with ops.h's attend_heads, the plain formula, up to float rounding.
#pragma once

#include <cstdint>
#include <span>

#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/ops.h"

namespace tempered {

// The longest run attend_run takes; callers split longer runs.
inline constexpr int64_t kMaxRunTokens = 32;

// `tokens` consecutive query tokens of one sequence, at positions first_position, first_position + 1,
// ..., each with the `heads` query heads of one KV head's group. Token t's head h starts at
// q + t * token_stride + h * head_dim; out likewise.
struct AttentionRun {
    const float* q = nullptr;
    float* out = nullptr;
    int64_t token_stride = 0;  // floats
    int64_t tokens = 0;        // 1 .. kMaxRunTokens
    int64_t heads = 0;
    int64_t head_dim = 0;  // a multiple of 16
    int64_t first_position = 0;
    int64_t window = 0;  // 0: causal over the whole sequence; W: the token at position p sees [p - W + 1, p] only
    // Attention sinks (gpt-oss): (heads) learned logits, one per query head of the group, each an extra term
    // exp(sink) in its softmax's denominator that no value goes with; nullptr: none.
    const float* sinks = nullptr;
};

// Floats of scratch attend_run needs for runs of up to kMaxRunTokens tokens of `heads` heads.
int64_t attention_scratch_floats(int64_t heads, int64_t head_dim);

// Whether attend_run handles this head size (else use attend_heads).
bool attention_run_supports(int64_t head_dim);

// out = softmax(scale * q · K^T, causal) · V for every query of the run; token t attends to positions
// [0, first_position + t] of the sequence whose blocks are `block_table`, or with a window W to the last
// W of them (llama.cpp's standard sliding window: position p0 is hidden from p1 when p1 - p0 >= W). Keys,
// values and block table entries of positions outside every token's window are never read, so a
// window layer's table may hold anything there. scratch: the calling thread's attention_scratch_floats
// floats. With sinks, head h's weights are exp(s_p) / (sum_p exp(s_p) + exp(sinks[h])).
void attend_run(const AttentionRun& run, const KvHeadView& kv, std::span<const int32_t> block_table, float scale,
                float* scratch);

// The same with the kernels of `isa`, which the CPU must support. For tests.
void attend_run_with_isa(const AttentionRun& run, const KvHeadView& kv, std::span<const int32_t> block_table,
                         float scale, float* scratch, CpuIsa isa);

// Per-ISA instantiations of attention_kernel.h.
void attend_run_scalar(const AttentionRun& run, const KvHeadView& kv, std::span<const int32_t> block_table, float scale,
                       float* scratch);
void attend_run_avx2(const AttentionRun& run, const KvHeadView& kv, std::span<const int32_t> block_table, float scale,
                     float* scratch);
void attend_run_avx512(const AttentionRun& run, const KvHeadView& kv, std::span<const int32_t> block_table, float scale,
                       float* scratch);

}  // namespace tempered
