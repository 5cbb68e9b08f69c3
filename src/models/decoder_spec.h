// What differs between the decoder-only families tempered runs, as data: one DecoderSpec per
// architecture (model_registry.cpp), read by the one decoder (decoder.cpp). A family is a row of
// constants plus what its GGUF says, not a copy of the forward pass.
#pragma once

#include <cstdint>
#include <vector>

#include "models/gate_activation.h"
#include "models/model_config.h"

namespace tempered {

// Where a block's RMSNorms sit around attention and the feed-forward.
enum class NormPlacement {
    PreNorm,         // x += f(norm(x)); llama, qwen2, qwen3
    PreAndPostNorm,  // x += norm(f(norm(x))); gemma 2/3: blk.N.post_attention_norm, blk.N.post_ffw_norm
};

// How attention keeps its keys and values.
enum class AttentionKind {
    Standard,  // per-head rotary keys and values (GQA); llama, qwen, gemma
    Latent,    // multi-head latent attention: one compressed latent + rope key per position; deepseek2
};

// What one layer's attention looks at.
struct LayerSpec {
    int64_t attention_window = 0;  // 0: every earlier position (global); W: the last W positions, itself included
};

struct DecoderSpec {
    RopeStyle rope_style = RopeStyle::AdjacentPairs;  // fixed by the architecture: its converter's Q/K row order
    AttentionKind attention = AttentionKind::Standard;
    bool qkv_bias = false;         // blk.N.attn_{q,k,v}.bias added after the projections (qwen2, gpt-oss)
    bool output_bias = false;      // blk.N.attn_output.bias added after the output projection (gpt-oss)
    bool attention_sinks = false;  // blk.N.attn_sinks.weight: one logit per query head in its softmax (gpt-oss)
    bool qk_norm = false;          // RMSNorm of each query and key head before rope (qwen3, gemma3)
    NormPlacement norm_placement = NormPlacement::PreNorm;
    GateFunction activation;  // of the dense feed-forward and of every expert
    // The feed-forward's RMSNorm, blk.N.<name>.weight: gpt-oss's converter names it post_attention_norm.
    const char* ffn_norm_name = "ffn_norm";
    float attention_scale = 0.0f;               // softmax scale of q·k; 0 means 1/sqrt(head_dim)
    float embedding_scale = 1.0f;               // the embedding rows are multiplied by it
    bool scale_embeddings_by_sqrt_dim = false;  // gemma: the loader sets embedding_scale = sqrt(embedding_dim)
    // Sliding-window families: every global_layer_period-th layer (i % period == period - 1) is global,
    // the others see the file's {arch}.attention.sliding_window positions; 0: every layer global.
    int64_t global_layer_period = 0;
    float window_rope_freq_base = 0.0f;  // rope base of the window layers; 0: the file's, as global layers
    bool final_norm = true;              // output_norm before the output projection
    bool tied_output = false;       // output projection is token_embd: set by the loader when output.weight is absent
    std::vector<LayerSpec> layers;  // (layer_count); filled by the loader, all global unless the family says otherwise
};

// The family constants of each architecture this build knows; the loader completes them from the file.
DecoderSpec llama_spec();
DecoderSpec qwen2_spec();
DecoderSpec qwen3_spec();
DecoderSpec qwen3moe_spec();
DecoderSpec gemma3_spec();
DecoderSpec deepseek2_spec();
DecoderSpec gpt_oss_spec();

}  // namespace tempered
