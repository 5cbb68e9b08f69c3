#include "models/model_config.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace tempered {
namespace {

// Bounds well beyond any real model, so that a hostile file cannot ask for a huge buffer.
constexpr int64_t kMaxDim = 1 << 20;
constexpr int64_t kMaxLayers = 4096;
constexpr int64_t kMaxContext = int64_t{1} << 24;

class MetadataReader {
public:
    MetadataReader(const GgufFile& file, std::string prefix) : file_(file), prefix_(std::move(prefix)) {}

    // Sets `out` from "{arch}.{key}" if present; an Error if present with the wrong type or out of range.
    Status integer(std::string_view key, int64_t& out, bool required, int64_t min, int64_t max) const {
        const std::string name = prefix_ + std::string(key);
        const GgufValue* value = file_.find(name);
        if (!value) return required ? Status(Error{"model metadata: missing " + name}) : Status(Ok{});
        const auto number = value->as_int();
        if (!number) {
            return Error{"model metadata: " + name + " has type " + std::string(gguf_value_type_name(value->type)) +
                         ", expected an integer"};
        }
        if (*number < min || *number > max) {
            return Error{"model metadata: " + name + " = " + std::to_string(*number) + " is outside [" +
                         std::to_string(min) + ", " + std::to_string(max) + "]"};
        }
        out = *number;
        return Ok{};
    }

    Status real(std::string_view key, float& out, bool required, double min, double max) const {
        const std::string name = prefix_ + std::string(key);
        const GgufValue* value = file_.find(name);
        if (!value) return required ? Status(Error{"model metadata: missing " + name}) : Status(Ok{});
        const auto number = value->as_float();
        if (!number) {
            return Error{"model metadata: " + name + " has type " + std::string(gguf_value_type_name(value->type)) +
                         ", expected a number"};
        }
        if (!std::isfinite(*number) || *number < min || *number > max) {
            return Error{"model metadata: " + name + " = " + std::to_string(*number) + " is out of range"};
        }
        out = static_cast<float>(*number);
        return Ok{};
    }

    const GgufValue* find(std::string_view key) const { return file_.find(prefix_ + std::string(key)); }
    std::string name(std::string_view key) const { return prefix_ + std::string(key); }

private:
    const GgufFile& file_;
    std::string prefix_;
};

#define TEMPERED_TRY(expression)                                           \
    do {                                                                   \
        if (auto status_ = (expression); !status_) return status_.error(); \
    } while (0)

Status read_yarn(const MetadataReader& meta, ModelConfig& config) {
    config.rope_original_context = config.context_length;
    TEMPERED_TRY(
        meta.integer(".rope.scaling.original_context_length", config.rope_original_context, false, 1, kMaxContext));
    return meta.real(".rope.scaling.yarn_log_multiplier", config.yarn_log_multiplier, false, 0.0, 100.0);
}

// The MLA dimensions of a deepseek2 file. Newer converters write key_length = kv_lora_rank + rope and
// value_length = kv_lora_rank (the absorbed shapes) plus key_length_mla / value_length_mla per head;
// older ones only key_length / value_length per head.
Status read_latent_attention(const MetadataReader& meta, ModelConfig& config) {
    LatentAttentionConfig latent;
    TEMPERED_TRY(meta.integer(".attention.kv_lora_rank", latent.kv_lora_rank, true, 1, kMaxDim));
    TEMPERED_TRY(meta.integer(".attention.q_lora_rank", latent.q_lora_rank, false, 0, kMaxDim));
    int64_t key_dim = 0;
    TEMPERED_TRY(meta.integer(".attention.key_length", key_dim, true, 1, kMaxDim));
    TEMPERED_TRY(meta.integer(".attention.value_length", latent.value_dim, true, 1, kMaxDim));
    TEMPERED_TRY(meta.integer(".attention.key_length_mla", key_dim, false, 1, kMaxDim));
    TEMPERED_TRY(meta.integer(".attention.value_length_mla", latent.value_dim, false, 1, kMaxDim));
    TEMPERED_TRY(meta.integer(".rope.dimension_count", latent.rope_dim, true, 2, key_dim - 1));
    if (latent.rope_dim % 2 != 0) return Error{"model metadata: rope.dimension_count must be even"};
    latent.nope_dim = key_dim - latent.rope_dim;
    config.head_dim = key_dim;
    config.rope_dims = latent.rope_dim;
    config.latent_attention = latent;
    return Ok{};
}

Status read_rope_scaling(const MetadataReader& meta, ModelConfig& config) {
    if (const GgufValue* type = meta.find(".rope.scaling.type")) {
        const std::string* name = type->as_string();
        if (!name) return Error{"model metadata: " + meta.name(".rope.scaling.type") + " is not a string"};
        if (*name == "none") return Ok{};
        if (*name != "linear" && *name != "yarn") {
            return Error{"model metadata: rope scaling type '" + *name + "' is not supported (none, linear, yarn)"};
        }
        config.rope_scaling = *name == "yarn" ? RopeScaling::Yarn : RopeScaling::Linear;
        TEMPERED_TRY(meta.real(".rope.scaling.attn_factor", config.rope_attention_factor, false, 1e-3, 1e3));
        if (config.rope_scaling == RopeScaling::Yarn) TEMPERED_TRY(read_yarn(meta, config));
        // llama.cpp's deepseek2 reads the log multiplier whatever the scaling type: with linear scaling it
        // still changes the softmax scale (latent_attention_scale).
        if (config.rope_scaling == RopeScaling::Linear && config.latent_attention) {
            TEMPERED_TRY(meta.real(".rope.scaling.yarn_log_multiplier", config.yarn_log_multiplier, false, 0.0, 100.0));
        }
        return meta.real(".rope.scaling.factor", config.rope_scaling_factor, true, 1e-3, 1e6);
    }
    if (meta.find(".rope.scale_linear")) {  // the older spelling of a linear factor
        config.rope_scaling = RopeScaling::Linear;
        return meta.real(".rope.scale_linear", config.rope_scaling_factor, true, 1e-3, 1e6);
    }
    return Ok{};
}

Status read_vocab_size(const GgufFile& file, ModelConfig& config) {
    if (const GgufValue* tokens = file.find("tokenizer.ggml.tokens")) {
        if (tokens->type != GgufValueType::ARRAY) return Error{"model metadata: tokenizer.ggml.tokens is not an array"};
        config.vocab_size = static_cast<int64_t>(tokens->elements.size());
    } else if (const GgufTensorInfo* embeddings = file.tensor("token_embd.weight");
               embeddings && embeddings->dims.size() == 2) {
        config.vocab_size = static_cast<int64_t>(embeddings->dims[1]);
    } else {
        return Error{"model metadata: no tokenizer.ggml.tokens and no 2-D token_embd.weight to size the vocabulary"};
    }
    if (config.vocab_size < 1 || config.vocab_size > (int64_t{1} << 24)) {
        return Error{"model metadata: vocabulary size " + std::to_string(config.vocab_size) + " is out of range"};
    }
    return Ok{};
}

Result<ModelConfig> read_latent_attention_model(const GgufFile& file, const MetadataReader& meta, ModelConfig config);

Status read_experts(const GgufFile& file, ModelConfig& config) {
    auto experts = read_moe_config(file, config.architecture);
    if (!experts) return experts.error();
    config.experts = *experts;
    if (config.experts && config.experts->leading_dense_layers > config.layer_count)
        return Error{"model metadata: leading_dense_block_count exceeds block_count"};
    return Ok{};
}

}  // namespace

Result<ModelConfig> read_serving_config(const GgufFile& file) {
    ModelConfig config;
    const auto architecture = file.get_string("general.architecture");
    if (!architecture || architecture->empty()) return Error{"model metadata: missing general.architecture"};
    config.architecture = *architecture;
    const MetadataReader meta(file, config.architecture);
    TEMPERED_TRY(meta.integer(".context_length", config.context_length, true, 1, kMaxContext));
    TEMPERED_TRY(read_vocab_size(file, config));
    return config;
}

Result<ModelConfig> read_model_config(const GgufFile& file, RopeStyle rope_style) {
    ModelConfig config;
    const auto architecture = file.get_string("general.architecture");
    if (!architecture || architecture->empty()) return Error{"model metadata: missing general.architecture"};
    config.architecture = *architecture;
    config.rope_style = rope_style;
    const MetadataReader meta(file, config.architecture);

    TEMPERED_TRY(meta.integer(".block_count", config.layer_count, true, 1, kMaxLayers));
    TEMPERED_TRY(meta.integer(".embedding_length", config.embedding_dim, true, 1, kMaxDim));
    if (const GgufValue* ffn = meta.find(".feed_forward_length"); ffn && ffn->type == GgufValueType::ARRAY) {
        return Error{"model metadata: per-layer " + meta.name(".feed_forward_length") + " is not supported"};
    }
    TEMPERED_TRY(meta.integer(".feed_forward_length", config.ffn_dim, true, 1, kMaxDim));
    TEMPERED_TRY(meta.integer(".attention.head_count", config.head_count, true, 1, kMaxDim));
    config.kv_head_count = config.head_count;
    TEMPERED_TRY(meta.integer(".attention.head_count_kv", config.kv_head_count, false, 1, kMaxDim));
    if (config.head_count % config.kv_head_count != 0) {
        return Error{"model metadata: head_count " + std::to_string(config.head_count) +
                     " is not a multiple of head_count_kv " + std::to_string(config.kv_head_count)};
    }
    config.head_dim = config.embedding_dim / config.head_count;
    if (!meta.find(".attention.key_length") && config.embedding_dim % config.head_count != 0) {
        return Error{"model metadata: embedding_length is not a multiple of head_count and key_length is absent"};
    }
    TEMPERED_TRY(meta.integer(".attention.key_length", config.head_dim, false, 1, kMaxDim));
    TEMPERED_TRY(meta.integer(".context_length", config.context_length, true, 1, kMaxContext));
    if (meta.find(".attention.kv_lora_rank")) return read_latent_attention_model(file, meta, config);
    int64_t value_dim = config.head_dim;
    TEMPERED_TRY(meta.integer(".attention.value_length", value_dim, false, 1, kMaxDim));
    if (value_dim != config.head_dim) {
        return Error{"model metadata: value_length " + std::to_string(value_dim) + " != key_length " +
                     std::to_string(config.head_dim) + " is not supported"};
    }
    if (config.head_dim % 2 != 0) return Error{"model metadata: head dimension must be even for rotary embedding"};
    TEMPERED_TRY(meta.real(".attention.layer_norm_rms_epsilon", config.rms_epsilon, true, 0.0, 1.0));
    config.rope_dims = config.head_dim;
    TEMPERED_TRY(meta.integer(".rope.dimension_count", config.rope_dims, false, 0, config.head_dim));
    if (config.rope_dims % 2 != 0) return Error{"model metadata: rope.dimension_count must be even"};
    TEMPERED_TRY(meta.real(".rope.freq_base", config.rope_freq_base, false, 1.0, 1e12));
    TEMPERED_TRY(read_rope_scaling(meta, config));
    TEMPERED_TRY(meta.integer(".attention.sliding_window", config.sliding_window, false, 0, kMaxContext));
    TEMPERED_TRY(read_vocab_size(file, config));
    TEMPERED_TRY(read_experts(file, config));
    return config;
}

namespace {

// The rest of read_model_config for a file with latent attention: its per-head sizes, then what every
// family reads.
Result<ModelConfig> read_latent_attention_model(const GgufFile& file, const MetadataReader& meta, ModelConfig config) {
    TEMPERED_TRY(read_latent_attention(meta, config));
    TEMPERED_TRY(meta.real(".attention.layer_norm_rms_epsilon", config.rms_epsilon, true, 0.0, 1.0));
    TEMPERED_TRY(meta.real(".rope.freq_base", config.rope_freq_base, false, 1.0, 1e12));
    TEMPERED_TRY(read_rope_scaling(meta, config));
    TEMPERED_TRY(read_vocab_size(file, config));
    TEMPERED_TRY(read_experts(file, config));
    return config;
}

float yarn_ramp(float low, float high, int64_t pair) {
    const float y = (static_cast<float>(pair) - low) / std::max(0.001f, high - low);
    return 1.0f - std::min(1.0f, std::max(0.0f, y));
}

// ggml_rope_yarn_corr_dim: the pair index whose wavelength fits `rotations` times in the original context.
float yarn_correction_dim(const ModelConfig& config, float rotations) {
    return static_cast<float>(config.rope_dims) *
           std::log(static_cast<float>(config.rope_original_context) / (rotations * 2.0f * static_cast<float>(M_PI))) /
           (2.0f * std::log(config.rope_freq_base));
}

float frequency_scale(const ModelConfig& config) {
    return config.rope_scaling == RopeScaling::None ? 1.0f : 1.0f / config.rope_scaling_factor;
}

// llama.cpp's attn_factor handed to ggml's rope for this file (llama_context's YaRN set-up).
float rope_attention_factor(const ModelConfig& config) {
    float factor = 1.0f;
    if (config.rope_scaling == RopeScaling::Yarn) {
        const float scale = config.rope_scaling_factor;
        // mscale / mscale_all_dim, both from yarn_log_multiplier when the file has one: 1 then.
        if (config.yarn_log_multiplier == 0.0f && scale > 1.0f) factor = 0.1f * std::log(scale) + 1.0f;
        factor *= 1.0f / (1.0f + 0.1f * std::log(scale));
    }
    return factor * config.rope_attention_factor;
}

}  // namespace

RotaryPairing rotary_pairing(RopeStyle style) {
    return style == RopeStyle::AdjacentPairs ? RotaryPairing::AdjacentElements : RotaryPairing::HalvesApart;
}

double rope_frequency_scale(const ModelConfig& config, int64_t pair) {
    if (config.rope_scaling == RopeScaling::Linear) return 1.0 / config.rope_scaling_factor;
    if (config.rope_scaling != RopeScaling::Yarn) return 1.0;
    const float low = std::max(0.0f, std::floor(yarn_correction_dim(config, 32.0f)));  // beta_fast
    const float high =
        std::min(static_cast<float>(config.rope_dims - 1), std::ceil(yarn_correction_dim(config, 1.0f)));  // beta_slow
    const float ramp = yarn_ramp(low, high, pair), scale = frequency_scale(config);
    return static_cast<double>(scale * (1.0f - ramp) + ramp);
}

float rope_magnitude(const ModelConfig& config) {
    const float factor = rope_attention_factor(config);
    if (config.rope_scaling != RopeScaling::Yarn) return factor;
    return factor * (1.0f + 0.1f * std::log(1.0f / frequency_scale(config)));
}

float latent_attention_scale(const ModelConfig& config) {
    const float log_scale = std::log(1.0f / frequency_scale(config));
    const float original_factor = rope_attention_factor(config) * (1.0f + 0.1f * log_scale);
    const float mscale_all_dims = config.yarn_log_multiplier / 0.1f;
    const float mscale = original_factor * (1.0f + 0.1f * mscale_all_dims * log_scale);
    return mscale * mscale / std::sqrt(static_cast<float>(config.head_dim));
}

KvCacheShape kv_cache_shape(const ModelConfig& config, DType type, int64_t block_size) {
    if (config.latent_attention) {
        return KvCacheShape{config.layer_count, 1,    config.latent_attention->latent_width(),
                            block_size,         type, config.layer_attention_windows,
                            /*latent=*/true};
    }
    return KvCacheShape{
        config.layer_count, config.kv_head_count, config.head_dim, block_size, type, config.layer_attention_windows};
}

}  // namespace tempered
