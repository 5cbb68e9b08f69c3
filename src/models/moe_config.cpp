#include "models/moe_config.h"

#include <cmath>

namespace tempered {
namespace {

// Bounds well beyond any real model (DeepSeek-V3: 256 experts, 8 per token, width 2048), so that a
// hostile file cannot ask for a huge buffer.
constexpr int64_t kMaxExperts = 4096;
constexpr int64_t kMaxExpertDim = 1 << 20;
constexpr int64_t kMaxDenseLeadingLayers = 4096;

// "{arch}.{key}" as an integer in [min, max], left unchanged when absent.
Status read_integer(const GgufFile& file, const std::string& key, int64_t& out, int64_t min, int64_t max) {
    const GgufValue* value = file.find(key);
    if (!value) return Ok{};
    const auto number = value->as_int();
    if (!number) return Error{"model metadata: " + key + " is not an integer"};
    if (*number < min || *number > max) {
        return Error{"model metadata: " + key + " = " + std::to_string(*number) + " is outside [" +
                     std::to_string(min) + ", " + std::to_string(max) + "]"};
    }
    out = *number;
    return Ok{};
}

Status require_integer(const GgufFile& file, const std::string& key, int64_t& out, int64_t min, int64_t max) {
    if (!file.find(key)) return Error{"model metadata: missing " + key + " (needed by a model with experts)"};
    return read_integer(file, key, out, min, max);
}

Status read_gating(const GgufFile& file, const std::string& key, ExpertGating& gating) {
    int64_t code = 0;
    if (auto status = read_integer(file, key, code, 0, 16); !status) return status;
    if (code == 0 || code == 1) {
        gating = ExpertGating::Softmax;
    } else if (code == 2) {
        gating = ExpertGating::Sigmoid;
    } else {
        return Error{"model metadata: " + key + " = " + std::to_string(code) +
                     " is not supported (1 softmax, 2 sigmoid)"};
    }
    return Ok{};
}

Status read_scale(const GgufFile& file, const std::string& key, float& scale) {
    const GgufValue* value = file.find(key);
    if (!value) return Ok{};
    const auto number = value->as_float();
    if (!number || !std::isfinite(*number) || *number < 0.0 || *number > 1e6)
        return Error{"model metadata: " + key + " is not a number in [0, 1e6]"};
    scale = *number == 0.0 ? 1.0f : static_cast<float>(*number);  // llama.cpp: 0 means "do not scale"
    return Ok{};
}

#define TEMPERED_MOE_TRY(expression)                                       \
    do {                                                                   \
        if (auto status_ = (expression); !status_) return status_.error(); \
    } while (0)

}  // namespace

Status validate_moe_config(const MoeConfig& config) {
    const auto fail = [](const std::string& what) { return Status(Error{"model metadata: experts: " + what}); };
    if (config.expert_count < 1) return fail("expert_count must be at least 1");
    if (config.experts_per_token < 1 || config.experts_per_token > config.expert_count)
        return fail("expert_used_count must be in [1, expert_count]");
    if (config.expert_ffn_dim < 1) return fail("expert_feed_forward_length must be at least 1");
    if (config.shared_expert_count < 0 || config.leading_dense_layers < 0) return fail("negative count");
    if (!config.group_limited()) return Ok{};
    if (config.group_count >= config.expert_count || config.expert_count % config.group_count != 0)
        return fail("expert_group_count must divide expert_count and be smaller than it");
    if (config.groups_per_token < 1 || config.groups_per_token >= config.group_count)
        return fail("expert_group_used_count must be in [1, expert_group_count)");
    if (config.experts_per_token > config.groups_per_token * config.experts_per_group())
        return fail("expert_used_count exceeds the experts of the groups a token may use");
    return Ok{};
}

Result<std::optional<MoeConfig>> read_moe_config(const GgufFile& file, const std::string& architecture) {
    const std::string prefix = architecture + ".";
    MoeConfig config;
    TEMPERED_MOE_TRY(read_integer(file, prefix + "expert_count", config.expert_count, 0, kMaxExperts));
    if (config.expert_count == 0) return std::optional<MoeConfig>{};
    if (architecture != "deepseek2" && architecture != "qwen3moe" && architecture != "gpt-oss") {
        return Error{
            "model: " + architecture + " with experts (" + prefix +
            "expert_count) is not supported; only deepseek2's, qwen3moe's and gpt-oss's mixtures of experts are"};
    }
    // Qwen3-MoE: softmax over every expert, the top k renormalised (llama.cpp's qwen3moe always does, the
    // file need not say), every layer routed, no shared experts.
    if (architecture == "qwen3moe") config.normalize_weights = true;
    TEMPERED_MOE_TRY(require_integer(file, prefix + "expert_used_count", config.experts_per_token, 1, kMaxExperts));
    TEMPERED_MOE_TRY(
        require_integer(file, prefix + "expert_feed_forward_length", config.expert_ffn_dim, 1, kMaxExpertDim));
    TEMPERED_MOE_TRY(read_integer(file, prefix + "expert_shared_count", config.shared_expert_count, 0, kMaxExperts));
    TEMPERED_MOE_TRY(read_integer(file, prefix + "leading_dense_block_count", config.leading_dense_layers, 0,
                                  kMaxDenseLeadingLayers));
    TEMPERED_MOE_TRY(read_integer(file, prefix + "expert_group_count", config.group_count, 0, kMaxExperts));
    TEMPERED_MOE_TRY(read_integer(file, prefix + "expert_group_used_count", config.groups_per_token, 0, kMaxExperts));
    TEMPERED_MOE_TRY(read_gating(file, prefix + "expert_gating_func", config.gating));
    if (const GgufValue* norm = file.find(prefix + "expert_weights_norm")) {
        const auto flag = norm->as_bool();
        if (!flag) return Error{"model metadata: " + prefix + "expert_weights_norm is not a boolean"};
        config.normalize_weights = *flag;
    }
    TEMPERED_MOE_TRY(read_scale(file, prefix + "expert_weights_scale", config.routed_scaling_factor));
    // gpt-oss: the gating is the architecture's (llama.cpp's openai-moe graph fixes it; the file does not say).
    if (architecture == "gpt-oss") {
        if (config.shared_expert_count != 0 || config.leading_dense_layers != 0 || config.group_limited() ||
            config.normalize_weights)
            return Error{
                "model metadata: gpt-oss with shared experts, dense layers, expert groups or normalized weights"};
        config.gating = ExpertGating::SoftmaxOfChosen;
    }
    if (architecture == "qwen3moe" && (config.shared_expert_count != 0 || config.leading_dense_layers != 0 ||
                                       config.group_limited() || config.gating != ExpertGating::Softmax))
        return Error{"model metadata: qwen3moe with shared experts, dense layers, expert groups or sigmoid gating"};
    TEMPERED_MOE_TRY(validate_moe_config(config));
    return std::optional<MoeConfig>{config};
}

}  // namespace tempered
