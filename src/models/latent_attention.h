// Multi-head latent attention (MLA), as llama.cpp's deepseek2 GGUFs describe it. Each token's keys and
// values are compressed to one latent of kv_lora_rank (attn_kv_a_mqa, then attn_kv_a_norm) plus one rope
// key of rope_dim shared by every head; the KV cache keeps only that row (kv_cache_shape's latent layout).
// Queries come from attn_q, or through a low-rank attn_q_a, attn_q_a_norm, attn_q_b; each head's query is
// [nope_dim | rope_dim], rope (adjacent pairs, YaRN) on the rope part only.
//
// Two forms of the same attention:
//  - expanded (the reference form): every cached latent is decompressed into per-head keys and values by attn_kv_b
//    (heads * (nope_dim + value_dim), kv_lora_rank), then ordinary multi-head attention;
//  - absorbed (what runs, prefill and decode): each query head is projected into the latent space by W_kb (attn_k_b),
//  attention
//    runs over the cached rows themselves (kernels/cpu/latent_attention.h), and the attended latent goes
//    through W_vb (attn_v_b) afterwards; it reads only the latent cache.
// Files of the older layout have attn_kv_b only; newer converters split it into attn_k_b and attn_v_b.
// Either is accepted: the missing one is made at load.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/thread_pool.h"
#include "core/whole_items_per_thread.h"
#include "formats/gguf.h"
#include "kernels/cpu/matmul.h"
#include "kv/kv_cache.h"
#include "models/batch.h"
#include "models/model_config.h"

namespace tempered {

struct LatentAttentionWeights {
    WeightMatrix query;                 // (heads * key_dim, embedding_dim); empty when q_lora_rank > 0
    WeightMatrix query_a;               // (q_lora_rank, embedding_dim)
    std::vector<float> query_a_norm;    // (q_lora_rank)
    WeightMatrix query_b;               // (heads * key_dim, q_lora_rank)
    WeightMatrix kv_a;                  // (kv_lora_rank + rope_dim, embedding_dim)
    std::vector<float> kv_a_norm;       // (kv_lora_rank)
    std::vector<WeightMatrix> key_b;    // (heads) of (kv_lora_rank, nope_dim): a query's nope part -> latent space
    std::vector<WeightMatrix> value_b;  // (heads) of (value_dim, kv_lora_rank): attended latent -> value
    WeightMatrix kv_b;                  // (heads * (nope_dim + value_dim), kv_lora_rank): per head keys then values
    WeightMatrix output;                // (embedding_dim, heads * value_dim)
    std::vector<float> made_at_load;    // owner of the float matrices built from the other layout

    // Every matrix the forward pass multiplies by, for the decoder's dequantize and pack passes.
    std::vector<WeightMatrix*> matrices();
};

// The attention tensors of layer `prefix` ("blk.N."); an Error names a missing or ill-shaped one.
Result<LatentAttentionWeights> load_latent_attention(const GgufFile& file, const std::string& prefix,
                                                     const ModelConfig& config);

// Which form attention takes for a run of consecutive tokens of one sequence.
enum class LatentAttentionForm {
    // Absorbed for every run, prefill included: with the SIMD decode kernel it is the faster form at every
    // length measured on ds2-large-q8_0 (pp512 1.8x, pp2048 3.0x the expanded form's tok/s), and it needs
    // no decompressed per-head keys and values. The expanded form stays as the reference it is tested against.
    Automatic,
    Expanded,
    Absorbed,
};

// The run state of latent attention: buffers sized on demand and reused, so the forward pass allocates
// only when a batch or context is larger than any before.
class LatentAttention {
public:
    LatentAttention(const ModelConfig& config, ThreadPool& pool);

    // out (tokens, embedding_dim) = attention of layer `layer` for every token of `batch`, whose normed
    // inputs are `normed` (tokens, embedding_dim); this step's latent rows are written into `cache` first.
    // rope_cos/rope_sin (tokens, rope_dim / 2): each token's rotary angles.
    void forward(const LatentAttentionWeights& weights, const Batch& batch, const float* normed, const float* rope_cos,
                 const float* rope_sin, KvCache& cache, int64_t layer, float* out);

    void set_form(LatentAttentionForm form) { form_ = form; }

private:
    struct Run {
        int64_t first_token = 0;
        int64_t token_count = 0;
    };
    void reserve(int64_t tokens);
    void reserve_absorbed(int64_t tokens);
    void project(const LatentAttentionWeights& weights, const float* normed, int64_t tokens);
    void rotate_and_cache(const Batch& batch, const float* rope_cos, const float* rope_sin, KvCache& cache,
                          int64_t layer);
    void plan_runs(const Batch& batch);
    void absorbed(const LatentAttentionWeights& weights, const Batch& batch, KvCache& cache, int64_t layer);
    void absorb_queries(const LatentAttentionWeights& weights, std::span<const int64_t> chosen);
    void attend_absorbed(const Batch& batch, KvCache& cache, int64_t layer, std::span<const int64_t> chosen);
    void expand_values(const LatentAttentionWeights& weights, std::span<const int64_t> chosen);
    void expanded(const LatentAttentionWeights& weights, const Batch& batch, KvCache& cache, int64_t layer,
                  const Run& run);
    bool is_absorbed(const Run& run) const;

    ModelConfig config_;
    LatentAttentionConfig latent_;
    ThreadPool& pool_;
    LatentAttentionForm form_ = LatentAttentionForm::Automatic;
    float scale_ = 1.0f;
    float rope_magnitude_ = 1.0f;
    std::vector<Run> runs_;
    std::vector<int64_t> absorbed_tokens_;  // batch indices of the tokens of absorbed runs
    std::vector<float> query_a_;            // (tokens, q_lora_rank)
    std::vector<float> query_;              // (tokens, heads, key_dim)
    std::vector<float> kv_;                 // (tokens, kv_lora_rank + rope_dim): this step's latent rows
    WholeItemsPerThread whole_heads_;       // runs the per-head matmuls as whole heads per thread
    int64_t head_floats_per_thread_ = 0;    // tokens * max(nope_dim, kv_lora_rank, value_dim)
    std::vector<float> head_in_;            // (threads, head_floats_per_thread): each thread's head inputs
    std::vector<float> head_out_;           // (threads, head_floats_per_thread): each thread's head outputs
    std::vector<float> absorbed_;           // (tokens, heads, kv_lora_rank + rope_dim): absorbed queries
    std::vector<float> attended_;           // (tokens, heads, kv_lora_rank): attended latents
    std::vector<float> attention_;          // (tokens, heads * value_dim): what attn_output multiplies
    std::vector<float> rows_;               // (context, kv_lora_rank + rope_dim): cached rows of an expanded run
    std::vector<float> latents_;            // (context, kv_lora_rank)
    std::vector<float> expanded_kv_;        // (context, heads * (nope_dim + value_dim))
    std::vector<float> scratch_;            // (threads, per-thread floats)
    int64_t scratch_per_thread_ = 0;
};

}  // namespace tempered
