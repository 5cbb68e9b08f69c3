#include "upstream/completion_body.h"

namespace tempered::upstream {

namespace {

// Sampling and penalties, every one explicit; DRY only when it is on (engines without DRY then refuse or
// ignore a value that would change nothing).
void add_sampling(const GenerationOptions& options, nlohmann::json& body) {
    const SamplingParams& sampling = options.sampling;
    body["temperature"] = sampling.temperature;
    body["top_p"] = sampling.top_p;
    body["top_k"] = sampling.top_k;
    body["min_p"] = sampling.min_p;
    body["typical_p"] = sampling.typical_p;
    body["presence_penalty"] = options.penalties.presence;
    body["frequency_penalty"] = options.penalties.frequency;
    body["repetition_penalty"] = options.penalties.repetition;
    body["seed"] = options.seed;
    if (!sampling.logit_bias.empty()) {
        nlohmann::json bias = nlohmann::json::object();
        for (const auto& [token, value] : sampling.logit_bias) bias[std::to_string(token)] = value;
        body["logit_bias"] = std::move(bias);
    }
    if (options.dry.active()) {
        body["dry_multiplier"] = options.dry.multiplier;
        body["dry_base"] = options.dry.base;
        body["dry_allowed_length"] = options.dry.allowed_length;
        body["dry_penalty_last_n"] = options.dry.penalty_last_n;
    }
}

}  // namespace

nlohmann::json completion_body(const GenerationOptions& options, const std::string& model) {
    nlohmann::json body = {{"model", model},          {"prompt", options.prompt},
                           {"n", options.n},          {"max_tokens", options.max_tokens},
                           {"stream", true},          {"stream_options", {{"include_usage", true}}},
                           {"return_token_ids", true}};
    if (options.min_tokens > 0) body["min_tokens"] = options.min_tokens;
    if (options.ignore_eos) body["ignore_eos"] = true;
    add_sampling(options, body);
    return body;
}

}  // namespace tempered::upstream
