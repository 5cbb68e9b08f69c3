#include "hf/hf_config.h"

#include <array>
#include <cmath>

#include "hf/gguf_values.h"

namespace tempered {
namespace {

using nlohmann::json;

// Reads config.json fields by name, each error naming the field.
class ConfigReader {
public:
    explicit ConfigReader(const json& config) : config_(config) {}

    bool has(const char* name) const { return config_.contains(name) && !config_.at(name).is_null(); }

    Result<int64_t> integer(const char* name) const {
        if (!has(name)) return Error{"config.json: missing \"" + std::string(name) + "\""};
        const json& value = config_.at(name);
        if (!value.is_number_integer() || value.get<int64_t>() < 1 || value.get<int64_t>() > (int64_t{1} << 32))
            return Error{"config.json: \"" + std::string(name) + "\" is not a positive integer"};
        return value.get<int64_t>();
    }
    Result<int64_t> integer_or(const char* name, int64_t fallback) const {
        return has(name) ? integer(name) : Result<int64_t>(fallback);
    }
    Result<double> real(const char* name) const {
        if (!has(name) || !config_.at(name).is_number())
            return Error{"config.json: \"" + std::string(name) + "\" is missing or not a number"};
        return config_.at(name).get<double>();
    }
    Result<double> real_or(const char* name, double fallback) const {
        return has(name) ? real(name) : Result<double>(fallback);
    }
    std::string text_or(const char* name, std::string fallback) const {
        return has(name) && config_.at(name).is_string() ? config_.at(name).get<std::string>() : fallback;
    }
    bool flag_or(const char* name, bool fallback) const {
        return has(name) && config_.at(name).is_boolean() ? config_.at(name).get<bool>() : fallback;
    }
    const json& raw() const { return config_; }

private:
    const json& config_;
};

#define TEMPERED_READ(target, expression) \
    do {                                  \
        auto read_ = (expression);        \
        if (!read_) return read_.error(); \
        target = read_.value();           \
    } while (0)

struct Family {
    std::string_view hf_name;
    std::string_view architecture;
};
constexpr std::array kFamilies = {
    Family{"LlamaForCausalLM", "llama"},          Family{"Qwen2ForCausalLM", "qwen2"},
    Family{"Qwen3ForCausalLM", "qwen3"},          Family{"Qwen3MoeForCausalLM", "qwen3moe"},
    Family{"Gemma3ForCausalLM", "gemma3"},        Family{"Gemma3ForConditionalGeneration", "gemma3"},
    Family{"DeepseekV2ForCausalLM", "deepseek2"}, Family{"DeepseekV3ForCausalLM", "deepseek2"},
};

// transformers 5 writes rope_parameters {rope_theta, rope_type, factor, ...}; 4.x rope_theta beside
// rope_scaling {type | rope_type, factor, ...}.
Status add_rope(const ConfigReader& config, const std::string& prefix, GgufMetadata& out) {
    const json* parameters = nullptr;
    if (config.has("rope_parameters") && config.raw().at("rope_parameters").is_object())
        parameters = &config.raw().at("rope_parameters");
    else if (config.has("rope_scaling") && config.raw().at("rope_scaling").is_object())
        parameters = &config.raw().at("rope_scaling");
    // Gemma 3 in transformers 5: one set per layer type; the global layers' is the model's rope, the sliding
    // layers' base is checked by check_gemma3.
    if (parameters != nullptr && parameters->contains("full_attention") && parameters->at("full_attention").is_object())
        parameters = &parameters->at("full_attention");
    double theta = 10000.0;
    if (config.has("rope_theta")) TEMPERED_READ(theta, config.real("rope_theta"));
    if (parameters != nullptr && parameters->contains("rope_theta"))
        TEMPERED_READ(theta, ConfigReader(*parameters).real("rope_theta"));
    out.emplace_back(prefix + ".rope.freq_base", gguf_float(theta));
    if (parameters == nullptr) return Ok{};
    const ConfigReader rope(*parameters);
    const std::string type = rope.text_or("rope_type", rope.text_or("type", "default"));
    if (type == "default") return Ok{};
    double factor = 1.0;
    TEMPERED_READ(factor, rope.real("factor"));
    if (type == "linear") {
        out.emplace_back(prefix + ".rope.scaling.type", gguf_string("linear"));
        out.emplace_back(prefix + ".rope.scaling.factor", gguf_float(factor));
        return Ok{};
    }
    if (type == "yarn") {
        // tempered's YaRN ramp is ggml's with its default betas; DeepSeek's mscale must equal mscale_all_dim (what
        // llama.cpp's converter assumes: the rotation's magnitude then cancels).
        double beta_fast = 32.0, beta_slow = 1.0, mscale = 0.0, mscale_all_dim = 0.0;
        TEMPERED_READ(beta_fast, rope.real_or("beta_fast", 32.0));
        TEMPERED_READ(beta_slow, rope.real_or("beta_slow", 1.0));
        TEMPERED_READ(mscale, rope.real_or("mscale", 0.0));
        TEMPERED_READ(mscale_all_dim, rope.real_or("mscale_all_dim", mscale));
        if (beta_fast != 32.0 || beta_slow != 1.0)
            return Error{"config.json: YaRN beta_fast / beta_slow other than 32 / 1 are not supported"};
        if (rope.has("mscale") && mscale != mscale_all_dim)
            return Error{"config.json: YaRN mscale other than mscale_all_dim is not supported"};
        int64_t original = 0;
        TEMPERED_READ(original, rope.integer("original_max_position_embeddings"));
        out.emplace_back(prefix + ".rope.scaling.type", gguf_string("yarn"));
        out.emplace_back(prefix + ".rope.scaling.factor", gguf_float(factor));
        out.emplace_back(prefix + ".rope.scaling.original_context_length", gguf_uint(static_cast<uint64_t>(original)));
        if (rope.has("attention_factor")) {
            double attention_factor = 1.0;
            TEMPERED_READ(attention_factor, rope.real("attention_factor"));
            out.emplace_back(prefix + ".rope.scaling.attn_factor", gguf_float(attention_factor));
        }
        return Ok{};
    }
    return Error{"config.json: rope type '" + type + "' is not supported (default, linear, yarn)"};
}

// Gemma 3's pattern, local rope base and softmax scale are constants of tempered's gemma3 row
// (models/model_registry.cpp); a directory that differs is refused rather than run wrongly.
Status check_gemma3(const ConfigReader& config, int64_t layers, int64_t head_dim, const std::string& prefix,
                    GgufMetadata& out) {
    int64_t window = 0;
    TEMPERED_READ(window, config.integer("sliding_window"));
    out.emplace_back(prefix + ".attention.sliding_window", gguf_uint(static_cast<uint64_t>(window)));
    if (config.has("layer_types") && config.raw().at("layer_types").is_array()) {
        const json& types = config.raw().at("layer_types");
        if (static_cast<int64_t>(types.size()) != layers)
            return Error{"config.json: \"layer_types\" has the wrong length"};
        for (int64_t i = 0; i < layers; ++i) {
            const bool global = i % 6 == 5;
            if (types[static_cast<size_t>(i)] != (global ? "full_attention" : "sliding_attention"))
                return Error{"config.json: \"layer_types\" is not Gemma 3's five sliding layers to one full"};
        }
    } else {
        int64_t period = 6;
        TEMPERED_READ(period, config.integer_or("sliding_window_pattern", 6));
        if (period != 6) return Error{"config.json: \"sliding_window_pattern\" must be 6 for Gemma 3"};
    }
    double local_base = 10000.0;
    TEMPERED_READ(local_base, config.real_or("rope_local_base_freq", 10000.0));
    if (config.has("rope_parameters") && config.raw().at("rope_parameters").contains("sliding_attention")) {
        const json& sliding = config.raw().at("rope_parameters").at("sliding_attention");
        if (!sliding.is_object()) return Error{"config.json: rope_parameters.sliding_attention is not an object"};
        TEMPERED_READ(local_base, ConfigReader(sliding).real_or("rope_theta", 10000.0));
    }
    if (local_base != 10000.0) return Error{"config.json: \"rope_local_base_freq\" must be 10000 for Gemma 3"};
    int64_t scalar = head_dim;
    TEMPERED_READ(scalar, config.integer_or("query_pre_attn_scalar", head_dim));
    if (scalar != head_dim) return Error{"config.json: \"query_pre_attn_scalar\" other than head_dim is not supported"};
    if (config.has("final_logit_softcapping") || config.has("attn_logit_softcapping"))
        return Error{"config.json: logit soft-capping is not supported"};
    return Ok{};
}

Status check_activation(const ConfigReader& config, const std::string& architecture) {
    const std::string expected = architecture == "gemma3" ? "gelu_pytorch_tanh" : "silu";
    const std::string act = config.text_or("hidden_act", config.text_or("hidden_activation", expected));
    if (act != expected) return Error{"config.json: activation '" + act + "' (expected " + expected + ")"};
    if (config.flag_or("attention_bias", false) && architecture != "qwen2")
        return Error{"config.json: \"attention_bias\" is not supported for " + architecture};
    if (config.flag_or("mlp_bias", false)) return Error{"config.json: \"mlp_bias\" is not supported"};
    if (config.flag_or("use_sliding_window", false) && architecture != "gemma3")
        return Error{"config.json: \"use_sliding_window\" is not supported for " + architecture};
    return Ok{};
}

// quantization_config: absent, or DeepSeek's FP8 E4M3 with square or rectangular weight blocks.
Status read_quantization(const json& root, HfModelDescription& out) {
    const auto config = root.find("quantization_config");
    if (config == root.end() || config->is_null()) return Ok{};
    if (!config->is_object()) return Error{"config.json: \"quantization_config\" is not an object"};
    const std::string method = config->value("quant_method", "");
    if (method != "fp8" || config->value("fmt", "e4m3") != "e4m3")
        return Error{"config.json: quantization '" + method + "' is not supported (fp8 e4m3 with block scales)"};
    const json blocks = config->value("weight_block_size", json::array({128, 128}));
    if (!blocks.is_array() || blocks.size() != 2 || !blocks[0].is_number_integer() || !blocks[1].is_number_integer() ||
        blocks[0].get<int64_t>() < 1 || blocks[1].get<int64_t>() < 1)
        return Error{"config.json: \"weight_block_size\" must be two positive integers"};
    out.fp8_block_rows = blocks[0].get<int64_t>();
    out.fp8_block_cols = blocks[1].get<int64_t>();
    return Ok{};
}

// Qwen3-MoE: every layer's feed-forward routed (decoder_sparse_step 1, no mlp_only_layers), softmax top-k
// renormalised unless norm_topk_prob says otherwise.
Status add_qwen3moe_experts(const ConfigReader& config, const std::string& prefix, GgufMetadata& out) {
    int64_t experts = 0, used = 0, width = 0, step = 1;
    TEMPERED_READ(experts, config.integer("num_experts"));
    TEMPERED_READ(used, config.integer("num_experts_per_tok"));
    TEMPERED_READ(width, config.integer("moe_intermediate_size"));
    TEMPERED_READ(step, config.integer_or("decoder_sparse_step", 1));
    const bool every_layer_routed =
        step == 1 && (!config.has("mlp_only_layers") ||
                      (config.raw().at("mlp_only_layers").is_array() && config.raw().at("mlp_only_layers").empty()));
    if (!every_layer_routed)
        return Error{
            "config.json: Qwen3-MoE with dense layers (decoder_sparse_step, mlp_only_layers) is not supported"};
    out.emplace_back(prefix + ".expert_count", gguf_uint(static_cast<uint64_t>(experts)));
    out.emplace_back(prefix + ".expert_used_count", gguf_uint(static_cast<uint64_t>(used)));
    out.emplace_back(prefix + ".expert_feed_forward_length", gguf_uint(static_cast<uint64_t>(width)));
    out.emplace_back(prefix + ".expert_weights_norm", gguf_bool(config.flag_or("norm_topk_prob", true)));
    return Ok{};
}

// DeepSeek V2/V3: multi-head latent attention's ranks and per-head sizes (the older GGUF layout: one attn_kv_b,
// key/value_length per head), the mixture of experts (leading dense layers, shared experts, groups, softmax or
// sigmoid scoring) and YaRN's mscale_all_dim as llama.cpp's converter writes them.
Status add_deepseek(const ConfigReader& config, const std::string& prefix, int64_t heads, int64_t layers,
                    GgufMetadata& out) {
    int64_t kv_lora = 0, nope = 0, rope = 0, value = 0, q_lora = 0;
    TEMPERED_READ(kv_lora, config.integer("kv_lora_rank"));
    TEMPERED_READ(nope, config.integer("qk_nope_head_dim"));
    TEMPERED_READ(rope, config.integer("qk_rope_head_dim"));
    TEMPERED_READ(value, config.integer("v_head_dim"));
    if (config.has("q_lora_rank")) TEMPERED_READ(q_lora, config.integer("q_lora_rank"));
    out.emplace_back(prefix + ".attention.q_lora_rank", gguf_uint(static_cast<uint64_t>(q_lora)));
    out.emplace_back(prefix + ".attention.kv_lora_rank", gguf_uint(static_cast<uint64_t>(kv_lora)));
    out.emplace_back(prefix + ".rope.dimension_count", gguf_uint(static_cast<uint64_t>(rope)));
    for (auto& [key, entry] : out) {  // per-head sizes replace the dense ones written before
        if (key == prefix + ".attention.key_length") entry = gguf_uint(static_cast<uint64_t>(nope + rope));
        if (key == prefix + ".attention.value_length") entry = gguf_uint(static_cast<uint64_t>(value));
        if (key == prefix + ".attention.head_count_kv") entry = gguf_uint(static_cast<uint64_t>(heads));
    }
    if (!config.has("n_routed_experts")) return Ok{};
    int64_t experts = 0, used = 0, width = 0, shared = 0, dense = 0, groups = 1, groups_used = 1;
    double scale = 1.0;
    if (config.has("first_k_dense_replace") && config.raw().at("first_k_dense_replace") != 0)
        TEMPERED_READ(dense, config.integer("first_k_dense_replace"));
    if (dense >= layers) return Ok{};  // every layer dense: no experts
    TEMPERED_READ(experts, config.integer("n_routed_experts"));
    TEMPERED_READ(used, config.integer("num_experts_per_tok"));
    TEMPERED_READ(width, config.integer("moe_intermediate_size"));
    if (config.has("n_shared_experts") && config.raw().at("n_shared_experts") != 0)
        TEMPERED_READ(shared, config.integer("n_shared_experts"));
    TEMPERED_READ(groups, config.integer_or("n_group", 1));
    TEMPERED_READ(groups_used, config.integer_or("topk_group", 1));
    TEMPERED_READ(scale, config.real_or("routed_scaling_factor", 1.0));
    const std::string scoring = config.text_or("scoring_func", "softmax");
    if (scoring != "softmax" && scoring != "sigmoid")
        return Error{"config.json: scoring_func '" + scoring + "' is not supported (softmax, sigmoid)"};
    int64_t layer_frequency = 1;
    TEMPERED_READ(layer_frequency, config.integer_or("moe_layer_freq", 1));
    if (layer_frequency != 1) return Error{"config.json: moe_layer_freq other than 1 is not supported"};
    out.emplace_back(prefix + ".expert_count", gguf_uint(static_cast<uint64_t>(experts)));
    out.emplace_back(prefix + ".expert_used_count", gguf_uint(static_cast<uint64_t>(used)));
    out.emplace_back(prefix + ".expert_feed_forward_length", gguf_uint(static_cast<uint64_t>(width)));
    out.emplace_back(prefix + ".expert_shared_count", gguf_uint(static_cast<uint64_t>(shared)));
    out.emplace_back(prefix + ".leading_dense_block_count", gguf_uint(static_cast<uint64_t>(dense)));
    out.emplace_back(prefix + ".expert_group_count", gguf_uint(static_cast<uint64_t>(groups)));
    out.emplace_back(prefix + ".expert_group_used_count", gguf_uint(static_cast<uint64_t>(groups_used)));
    out.emplace_back(prefix + ".expert_gating_func", gguf_uint(scoring == "sigmoid" ? 2 : 1));
    out.emplace_back(prefix + ".expert_weights_scale", gguf_float(scale));
    out.emplace_back(prefix + ".expert_weights_norm", gguf_bool(config.flag_or("norm_topk_prob", false)));
    return Ok{};
}

// YaRN's mscale_all_dim (DeepSeek): llama.cpp's converter writes 0.1 * mscale_all_dim as yarn_log_multiplier.
Status add_deepseek_yarn(const ConfigReader& config, const std::string& prefix, GgufMetadata& out) {
    const char* field = config.has("rope_parameters") ? "rope_parameters" : "rope_scaling";
    if (!config.has(field) || !config.raw().at(field).is_object()) return Ok{};
    const ConfigReader rope(config.raw().at(field));
    if (!rope.has("mscale_all_dim")) return Ok{};
    double mscale_all_dim = 0;
    TEMPERED_READ(mscale_all_dim, rope.real("mscale_all_dim"));
    out.emplace_back(prefix + ".rope.scaling.yarn_log_multiplier", gguf_float(0.1 * mscale_all_dim));
    return Ok{};
}

}  // namespace

std::vector<std::string> supported_hf_architectures() {
    std::vector<std::string> names;
    for (const Family& family : kFamilies) names.emplace_back(family.hf_name);
    return names;
}

Result<HfModelDescription> describe_hf_model(const json& root) {
    if (!root.is_object()) return Error{"config.json: not a JSON object"};
    const auto names = root.find("architectures");
    if (names == root.end() || !names->is_array() || names->empty() || !(*names)[0].is_string())
        return Error{"config.json: no \"architectures\" list"};
    HfModelDescription out;
    out.hf_architecture = (*names)[0].get<std::string>();
    for (const Family& family : kFamilies)
        if (family.hf_name == out.hf_architecture) out.architecture = family.architecture;
    if (out.architecture.empty()) {
        std::string known;
        for (const auto& name : supported_hf_architectures()) known += (known.empty() ? "" : ", ") + name;
        return Error{"config.json: architecture '" + out.hf_architecture + "' is not supported (supported: " + known +
                     ")"};
    }
    const bool multimodal = out.hf_architecture == "Gemma3ForConditionalGeneration";
    if (multimodal) {
        if (!root.contains("text_config") || !root.at("text_config").is_object())
            return Error{"config.json: " + out.hf_architecture + " without a \"text_config\""};
        out.tensor_prefixes = {"language_model.model.", "model.language_model."};
        out.ignored_prefixes = {"vision_tower.", "multi_modal_projector.", "model.vision_tower.",
                                "model.multi_modal_projector."};
    }
    const ConfigReader config(multimodal ? root.at("text_config") : root);
    const std::string prefix = out.architecture;
    if (auto checked = check_activation(config, out.architecture); !checked) return checked.error();

    int64_t hidden = 0, ffn = 0, context = 0;
    TEMPERED_READ(out.layer_count, config.integer("num_hidden_layers"));
    TEMPERED_READ(hidden, config.integer("hidden_size"));
    TEMPERED_READ(ffn, config.integer("intermediate_size"));
    TEMPERED_READ(out.head_count, config.integer("num_attention_heads"));
    TEMPERED_READ(out.kv_head_count, config.integer_or("num_key_value_heads", out.head_count));
    TEMPERED_READ(context, config.integer("max_position_embeddings"));
    int64_t head_dim = hidden / out.head_count;
    TEMPERED_READ(head_dim, config.integer_or("head_dim", head_dim));
    double epsilon = 0;
    TEMPERED_READ(epsilon, config.real("rms_norm_eps"));

    GgufMetadata& meta = out.metadata;
    meta.emplace_back("general.architecture", gguf_string(out.architecture));
    meta.emplace_back(prefix + ".block_count", gguf_uint(static_cast<uint64_t>(out.layer_count)));
    meta.emplace_back(prefix + ".context_length", gguf_uint(static_cast<uint64_t>(context)));
    meta.emplace_back(prefix + ".embedding_length", gguf_uint(static_cast<uint64_t>(hidden)));
    meta.emplace_back(prefix + ".feed_forward_length", gguf_uint(static_cast<uint64_t>(ffn)));
    meta.emplace_back(prefix + ".attention.head_count", gguf_uint(static_cast<uint64_t>(out.head_count)));
    meta.emplace_back(prefix + ".attention.head_count_kv", gguf_uint(static_cast<uint64_t>(out.kv_head_count)));
    meta.emplace_back(prefix + ".attention.key_length", gguf_uint(static_cast<uint64_t>(head_dim)));
    meta.emplace_back(prefix + ".attention.value_length", gguf_uint(static_cast<uint64_t>(head_dim)));
    meta.emplace_back(prefix + ".attention.layer_norm_rms_epsilon", gguf_float(epsilon));
    if (auto rope = add_rope(config, prefix, meta); !rope) return rope.error();
    if (out.architecture == "gemma3") {
        if (auto checked = check_gemma3(config, out.layer_count, head_dim, prefix, meta); !checked)
            return checked.error();
        out.norms_plus_one = true;
    }
    out.permute_query_key = out.architecture == "llama";
    if (out.architecture == "deepseek2") {
        if (auto latent = add_deepseek(config, prefix, out.head_count, out.layer_count, meta); !latent)
            return latent.error();
        if (auto yarn = add_deepseek_yarn(config, prefix, meta); !yarn) return yarn.error();
        if (config.has("num_nextn_predict_layers") && config.raw().at("num_nextn_predict_layers") != 0)
            TEMPERED_READ(out.prediction_layers, config.integer("num_nextn_predict_layers"));
    }
    if (out.architecture == "qwen3moe") {
        if (auto experts = add_qwen3moe_experts(config, prefix, meta); !experts) return experts.error();
    }
    if (auto quantization = read_quantization(root, out); !quantization) return quantization.error();
    if (config.flag_or("tie_word_embeddings", root.value("tie_word_embeddings", false))) out.head_name.clear();
    if (multimodal) out.head_name.clear();  // Gemma 3's language model always ties its head
    return out;
}

}  // namespace tempered
