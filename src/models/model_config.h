// The hyperparameters of a decoder-only transformer, read from GGUF metadata ("{arch}.block_count", ...).
// Every value comes from the file and is checked there, so the forward pass can trust it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "formats/gguf.h"
#include "kernels/cpu/ops.h"
#include "kv/kv_cache.h"
#include "models/moe_config.h"

namespace tempered {

enum class RopeScaling { None, Linear, Yarn };

// Which element pairs an architecture's rotary embedding rotates together (ggml's "normal" and "neox").
enum class RopeStyle {
    AdjacentPairs,  // (x[2i], x[2i+1]); llama GGUFs, whose Q/K rows the converter permuted to suit it
    Halves,         // (x[i], x[i + rotary_dims/2]); qwen2, gemma, phi3, ...
};

// Multi-head latent attention (deepseek2): present when the file has {arch}.attention.kv_lora_rank.
// Keys and values of every head are decompressed from one cached latent per position, plus one rope key
// shared by all heads (see models/latent_attention.h).
struct LatentAttentionConfig {
    int64_t q_lora_rank = 0;   // {arch}.attention.q_lora_rank; 0: queries come from attn_q directly
    int64_t kv_lora_rank = 0;  // {arch}.attention.kv_lora_rank: the width of the cached latent
    int64_t nope_dim = 0;      // per head, the key dimensions without rope
    int64_t rope_dim = 0;      // {arch}.rope.dimension_count: the decoupled rope part of each key and query
    int64_t value_dim = 0;     // per head: value_length_mla, or value_length in files of the older layout

    int64_t key_dim() const { return nope_dim + rope_dim; }           // per head: key_length_mla
    int64_t latent_width() const { return kv_lora_rank + rope_dim; }  // cached values per position and layer
};

// The rope kernel's name for the same pairing.
RotaryPairing rotary_pairing(RopeStyle style);

struct ModelConfig {
    std::string architecture;         // general.architecture, e.g. "llama"
    int64_t layer_count = 0;          // {arch}.block_count
    int64_t embedding_dim = 0;        // {arch}.embedding_length: the residual stream width
    int64_t ffn_dim = 0;              // {arch}.feed_forward_length
    int64_t head_count = 0;           // {arch}.attention.head_count: query heads
    int64_t kv_head_count = 0;        // {arch}.attention.head_count_kv (defaults to head_count)
    int64_t head_dim = 0;             // {arch}.attention.key_length (defaults to embedding_dim / head_count)
    int64_t vocab_size = 0;           // tokenizer.ggml.tokens length, else token_embd rows
    int64_t context_length = 0;       // {arch}.context_length: positions the model was trained for
    float rms_epsilon = 0.0f;         // {arch}.attention.layer_norm_rms_epsilon
    int64_t rope_dims = 0;            // {arch}.rope.dimension_count (defaults to head_dim)
    float rope_freq_base = 10000.0f;  // {arch}.rope.freq_base
    RopeScaling rope_scaling = RopeScaling::None;     // {arch}.rope.scaling.type
    float rope_scaling_factor = 1.0f;                 // {arch}.rope.scaling.factor: positions are divided by it
    RopeStyle rope_style = RopeStyle::AdjacentPairs;  // fixed by the architecture, not the file
    // YaRN (rope_scaling == Yarn): {arch}.rope.scaling.original_context_length (default context_length),
    // yarn_log_multiplier as the file holds it (0.1 * DeepSeek's mscale_all_dim) and attn_factor.
    int64_t rope_original_context = 0;
    float yarn_log_multiplier = 0.0f;
    float rope_attention_factor = 1.0f;
    // Multi-head latent attention; head_dim is then its key_dim() (the softmax scale's dimension).
    std::optional<LatentAttentionConfig> latent_attention;
    int64_t sliding_window = 0;  // {arch}.attention.sliding_window: window layers' positions; 0 if absent
    // Per layer, the positions a query attends to: 0 every earlier one (global), W the last W. Empty:
    // every layer is global. The KV cache keeps only the window's blocks for window layers.
    std::vector<int64_t> layer_attention_windows;
    std::optional<MoeConfig> experts;  // routed experts ({arch}.expert_count > 0): moe_config.h; else dense

    int64_t q_dim() const { return head_count * head_dim; }
    int64_t kv_dim() const { return kv_head_count * head_dim; }
    int64_t group_size() const { return head_count / kv_head_count; }  // query heads per KV head
};

// Reads and validates the hyperparameters of `file`, whose architecture uses `rope_style`.
// An Error names the missing or inconsistent key; tensor shapes are checked by the model loader.
Result<ModelConfig> read_model_config(const GgufFile& file, RopeStyle rope_style);

// Only what serving needs when another engine runs the model (upstream mode): the architecture, the
// vocabulary size and the context length. Any architecture, even one this build cannot run.
Result<ModelConfig> read_serving_config(const GgufFile& file);

// What rope pair `pair` multiplies base^(-2 pair / rope_dims) by: 1, 1 / factor (linear), or YaRN's blend
// of the two by how many rotations the pair makes over the original context (ggml's rope_yarn ramp).
double rope_frequency_scale(const ModelConfig& config, int64_t pair);

// The factor YaRN scales rotated cos/sin by (ggml's rope mscale as llama.cpp passes it for this file):
// 1 unless rope scaling is YaRN or the file sets rope.scaling.attn_factor.
float rope_magnitude(const ModelConfig& config);

// The softmax scale of latent attention as llama.cpp's deepseek2 computes it: mscale^2 / sqrt(key_dim),
// with YaRN's attention temperature mscale = 1 + 0.1 * mscale_all_dim * ln(factor) folded in.
float latent_attention_scale(const ModelConfig& config);

// The KV cache this model needs: one block layout per layer, KV heads of head_dim elements of `type`;
// for latent attention one latent of latent_width() elements per position and layer, no values.
KvCacheShape kv_cache_shape(const ModelConfig& config, DType type, int64_t block_size = 16);

}  // namespace tempered
