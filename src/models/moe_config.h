// The mixture-of-experts hyperparameters of a DeepSeek-style model (llama.cpp's `deepseek2`), Qwen3-MoE or gpt-oss,
// read from GGUF metadata: how many routed experts, how many a token uses, the shared experts beside them, and how the
// router scores, limits to groups and weighs its choice (moe_routing.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/result.h"
#include "formats/gguf.h"

namespace tempered {

// {arch}.expert_gating_func: 1 softmax (the default when absent or 0, as llama.cpp's deepseek2), 2 sigmoid;
// SoftmaxOfChosen is gpt-oss's, fixed by the architecture: the top k raw logits chosen, their softmax the weights.
enum class ExpertGating { Softmax, Sigmoid, SoftmaxOfChosen };

struct MoeConfig {
    int64_t expert_count = 0;          // {arch}.expert_count: routed experts per MoE layer
    int64_t experts_per_token = 0;     // {arch}.expert_used_count: routed experts each token runs
    int64_t shared_expert_count = 0;   // {arch}.expert_shared_count: run on every token, fused into one FFN
    int64_t expert_ffn_dim = 0;        // {arch}.expert_feed_forward_length: hidden width of one expert
    int64_t leading_dense_layers = 0;  // {arch}.leading_dense_block_count: first layers with a dense FFN
    int64_t group_count = 0;           // {arch}.expert_group_count: 0 or 1 = no group-limited routing
    int64_t groups_per_token = 0;      // {arch}.expert_group_used_count: groups a token may pick from
    ExpertGating gating = ExpertGating::Softmax;
    bool normalize_weights = false;      // {arch}.expert_weights_norm: chosen weights divided by their sum
    float routed_scaling_factor = 1.0f;  // {arch}.expert_weights_scale (absent or 0: 1), after normalizing

    bool group_limited() const { return group_count > 1; }
    int64_t experts_per_group() const { return group_limited() ? expert_count / group_count : expert_count; }
    bool is_moe_layer(int64_t layer) const { return layer >= leading_dense_layers; }
};

// The MoE hyperparameters of `file` (architecture `architecture`, the "{arch}." prefix), nullopt when it
// has no routed experts ({arch}.expert_count absent or 0). An Error names a missing or inconsistent key,
// or an architecture whose experts this engine does not run (deepseek2's, qwen3moe's and gpt-oss's routing are).
Result<std::optional<MoeConfig>> read_moe_config(const GgufFile& file, const std::string& architecture);

// Checks the relations between the fields (the same checks read_moe_config makes), for configs built in code.
Status validate_moe_config(const MoeConfig& config);

}  // namespace tempered
