// The operator's sampling settings, from flags and/or a --config file (flags win): preferred defaults,
// whether the model's generation config is consulted, where it is, and the opt-in policy.
#pragma once

#include <optional>
#include <string>

#include "core/result.h"
#include "formats/gguf.h"
#include "sampling/generation_config.h"
#include "sampling/sampling_resolution.h"

namespace tempered {

struct SamplingFlags {
    std::string preferred_json;     // --preferred-sampling-params
    std::string defaults_mode;      // --sampling-defaults: "model" (default) or "openai"
    std::string generation_config;  // --generation-config PATH
    std::string policy_json;        // --sampling-policy
    std::string config_file;        // --config FILE
};

struct SamplingSettings {
    SamplingDefaultsConfig config;
    std::vector<std::string> notes;  // where values came from and what was skipped, for the start-up log
    // The config file's tool-call keys ("" when absent), applied by `serve` where its flags are not given.
    std::string tool_call_parser;
    std::string tool_call_validation;
    // The config file's degeneration_guard value, if any; --degeneration-guard wins over it
    // (settings/degeneration_settings.h reads it).
    std::optional<nlohmann::json> degeneration_guard;
};

// `model_file` null: no model of its own (a passthrough front without --model), so no model defaults.
Result<SamplingSettings> load_sampling_settings(const SamplingFlags& flags, const GgufFile* model_file);

}  // namespace tempered
