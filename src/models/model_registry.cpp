#include <array>
#include <string>

#include "models/decoder.h"
#include "models/decoder_spec.h"
#include "models/model.h"

namespace tempered {

// Llama GGUFs store Q and K rows permuted for adjacent-pair rope; everything else is the plain block.
DecoderSpec llama_spec() {
    DecoderSpec spec;
    spec.rope_style = RopeStyle::AdjacentPairs;
    return spec;
}

// Qwen2 / Qwen2.5: Llama's block plus biases on the Q, K and V projections, and half-split (NEOX) rope
// whose base ({arch}.rope.freq_base, 1e6 for Qwen2.5) comes from the file like every other family's.
DecoderSpec qwen2_spec() {
    DecoderSpec spec;
    spec.rope_style = RopeStyle::Halves;
    spec.qkv_bias = true;
    return spec;
}

// Qwen3: Qwen2's half-split rope without the Q/K/V biases, and an RMSNorm of each query and key head
// (blk.N.attn_{q,k}_norm.weight, head_dim floats) before rope.
DecoderSpec qwen3_spec() {
    DecoderSpec spec;
    spec.rope_style = RopeStyle::Halves;
    spec.qk_norm = true;
    return spec;
}

// Qwen3-MoE: Qwen3's attention, every feed-forward a mixture of experts (qwen3moe.expert_count routed
// experts, softmax top-k renormalised; models/moe_config.h), no shared expert.
DecoderSpec qwen3moe_spec() { return qwen3_spec(); }

// Gemma 3: QK-norm, a post-norm after attention and after the feed-forward, GeGLU (tanh GELU), embeddings
// scaled by sqrt(embedding_dim), half-split rope, the output tied to the embeddings. Five of every six
// layers attend through a sliding window of {arch}.attention.sliding_window positions and rotate with
// base 10,000; the sixth is global, with the file's rope.freq_base (1e6). Neither the pattern nor the
// local base is in the file: Gemma 3 constants, as llama.cpp hard-codes them. The softmax scale is
// 1/sqrt(head_dim), the default (query_pre_attn_scalar = head_dim for every size but 27B).
DecoderSpec gemma3_spec() {
    DecoderSpec spec;
    spec.rope_style = RopeStyle::Halves;
    spec.qk_norm = true;
    spec.norm_placement = NormPlacement::PreAndPostNorm;
    spec.activation.kind = GateActivation::GeluTanh;
    spec.scale_embeddings_by_sqrt_dim = true;
    spec.global_layer_period = 6;
    spec.window_rope_freq_base = 10000.0f;
    return spec;
}

// DeepSeek V2 / V3: multi-head latent attention (models/latent_attention.h) with rope on the decoupled
// key part only, in adjacent pairs (llama.cpp's rope type NORM for deepseek2), YaRN from the file.
DecoderSpec deepseek2_spec() {
    DecoderSpec spec;
    spec.rope_style = RopeStyle::AdjacentPairs;
    spec.attention = AttentionKind::Latent;
    return spec;
}

// gpt-oss: Q/K/V and output biases, a learned sink logit per head in each softmax, half-split rope (YaRN from
// the file), even layers attending through {arch}.attention.sliding_window positions and odd ones globally
// (llama.cpp's swa pattern 2; the window layers keep the global rope base), and every feed-forward a mixture of
// experts routed by softmax over the chosen logits (moe_config.h) with the clamped SwiGLU. The norm before
// the experts is stored as post_attention_norm; there is no norm after a block.
DecoderSpec gpt_oss_spec() {
    DecoderSpec spec;
    spec.rope_style = RopeStyle::Halves;
    spec.qkv_bias = true;
    spec.output_bias = true;
    spec.attention_sinks = true;
    spec.activation.kind = GateActivation::SiluClamped;
    spec.ffn_norm_name = "post_attention_norm";
    spec.global_layer_period = 2;
    return spec;
}

std::span<const ArchitectureEntry> supported_architectures() {
    static constexpr std::array entries = {
        ArchitectureEntry{"llama", llama_spec},         ArchitectureEntry{"qwen2", qwen2_spec},
        ArchitectureEntry{"qwen3", qwen3_spec},         ArchitectureEntry{"gemma3", gemma3_spec},
        ArchitectureEntry{"deepseek2", deepseek2_spec}, ArchitectureEntry{"qwen3moe", qwen3moe_spec},
        ArchitectureEntry{"gpt-oss", gpt_oss_spec},
    };
    return entries;
}

Result<std::unique_ptr<Model>> load_model(const GgufFile& file, ThreadPool& pool, const ModelOptions& options) {
    const auto architecture = file.get_string("general.architecture");
    if (!architecture) return Error{"model: the file has no general.architecture"};
    std::string known;
    for (const auto& entry : supported_architectures()) {
        if (entry.architecture == *architecture) {
            DecoderSpec spec = entry.spec();
            auto config = read_model_config(file, spec.rope_style);
            if (!config) return config.error();
            return load_decoder(file, std::move(config.value()), std::move(spec), options, pool);
        }
        known += (known.empty() ? "" : ", ") + std::string(entry.architecture);
    }
    return Error{"model: architecture '" + *architecture + "' is not supported (supported: " + known + ")"};
}

}  // namespace tempered
