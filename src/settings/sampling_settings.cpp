#include "settings/sampling_settings.h"

#include <fstream>
#include <sstream>

namespace tempered {
namespace {

Result<nlohmann::json> parse_json_flag(const std::string& text, const std::string& what) {
    nlohmann::json value = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (value.is_discarded()) return Error{what + ": not valid JSON: " + text};
    return value;
}

}  // namespace

Result<SamplingSettings> load_sampling_settings(const SamplingFlags& flags, const GgufFile* model_file) {
    SamplingFlags merged = flags;
    nlohmann::json preferred_object, policy_object;
    std::string tool_call_parser, tool_call_validation;
    std::optional<nlohmann::json> degeneration_guard;
    if (!flags.config_file.empty()) {
        std::ifstream stream(flags.config_file);
        if (!stream) return Error{"--config: cannot read '" + flags.config_file + "'"};
        std::stringstream text;
        text << stream.rdbuf();
        nlohmann::json config = nlohmann::json::parse(text.str(), nullptr, false);
        if (config.is_discarded() || !config.is_object())
            return Error{"--config: '" + flags.config_file + "' is not a JSON object"};
        for (const auto& [key, value] : config.items()) {
            if (key == "preferred_sampling_params")
                preferred_object = value;
            else if (key == "sampling_policy")
                policy_object = value;
            else if (key == "sampling_defaults" && value.is_string()) {
                if (merged.defaults_mode.empty()) merged.defaults_mode = value.get<std::string>();
            } else if (key == "generation_config" && value.is_string()) {
                if (merged.generation_config.empty()) merged.generation_config = value.get<std::string>();
            } else if (key == "tool_call_parser" && value.is_string()) {
                tool_call_parser = value.get<std::string>();
            } else if (key == "tool_call_validation" && value.is_string()) {
                tool_call_validation = value.get<std::string>();
            } else if (key == "degeneration_guard") {
                degeneration_guard = value;
            } else {
                return Error{"--config: unknown or mistyped key '" + key +
                             "' (known: preferred_sampling_params, sampling_policy, sampling_defaults, "
                             "generation_config, tool_call_parser, tool_call_validation, degeneration_guard)"};
            }
        }
    }
    if (!flags.preferred_json.empty()) {
        auto parsed = parse_json_flag(flags.preferred_json, "--preferred-sampling-params");
        if (!parsed) return parsed.error();
        preferred_object = *parsed;
    }
    if (!flags.policy_json.empty()) {
        auto parsed = parse_json_flag(flags.policy_json, "--sampling-policy");
        if (!parsed) return parsed.error();
        policy_object = *parsed;
    }
    if (merged.defaults_mode.empty()) merged.defaults_mode = "model";
    if (merged.defaults_mode != "model" && merged.defaults_mode != "openai")
        return Error{"--sampling-defaults must be 'model' or 'openai' (got '" + merged.defaults_mode + "')"};

    SamplingSettings settings;
    settings.tool_call_parser = std::move(tool_call_parser);
    settings.tool_call_validation = std::move(tool_call_validation);
    settings.degeneration_guard = std::move(degeneration_guard);
    if (!preferred_object.is_null()) {
        auto preferred = parse_sampling_values(preferred_object, "preferred sampling params");
        if (!preferred) return preferred.error();
        settings.config.preferred = *preferred;
    }
    if (!policy_object.is_null()) {
        auto policy = parse_sampling_policy(policy_object, "sampling policy");
        if (!policy) return policy.error();
        settings.config.policy = *policy;
    }
    if (merged.defaults_mode == "model" && !model_file) {
        settings.notes.push_back("no model of its own: the operator's values, then OpenAI's defaults");
    } else if (merged.defaults_mode == "model") {
        auto model = load_model_sampling_defaults(*model_file, merged.generation_config);
        if (!model) return model.error();
        settings.config.model = model->values;
        for (const auto& origin : model->origins) settings.notes.push_back("model sampling defaults from " + origin);
        for (const auto& warning : model->warnings) settings.notes.push_back("warning: " + warning);
    } else {
        settings.notes.push_back("--sampling-defaults openai: the model's generation config is not used");
    }
    return settings;
}

}  // namespace tempered
