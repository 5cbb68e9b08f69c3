#include "upstream/completion_body.h"

namespace tempered::upstream {

namespace {

// Sampling and penalties, every one the upstream takes explicit; DRY only when it is on (engines without DRY
// then refuse or ignore a value that would change nothing).
void add_sampling(const GenerationOptions& options, const UpstreamCapabilities& capabilities, nlohmann::json& body) {
    const SamplingParams& sampling = options.sampling;
    body["temperature"] = sampling.temperature;
    body["top_p"] = sampling.top_p;
    if (capabilities.top_k) body["top_k"] = sampling.top_k;
    if (capabilities.min_p) body["min_p"] = sampling.min_p;
    if (capabilities.typical_p) body["typical_p"] = sampling.typical_p;
    body["presence_penalty"] = options.penalties.presence;
    body["frequency_penalty"] = options.penalties.frequency;
    if (capabilities.repetition_penalty) body[capabilities.repetition_penalty] = options.penalties.repetition;
    body["seed"] = options.seed;
    if (!sampling.logit_bias.empty()) {
        nlohmann::json bias = nlohmann::json::object();
        for (const auto& [token, value] : sampling.logit_bias) bias[std::to_string(token)] = value;
        body["logit_bias"] = std::move(bias);
    }
    if (options.dry.active() && capabilities.dry) {
        body["dry_multiplier"] = options.dry.multiplier;
        body["dry_base"] = options.dry.base;
        body["dry_allowed_length"] = options.dry.allowed_length;
        body["dry_penalty_last_n"] = options.dry.penalty_last_n;
    }
}

}  // namespace

nlohmann::json completion_body(const GenerationOptions& options, const std::string& model,
                               const UpstreamCapabilities& capabilities) {
    nlohmann::json body = {{"model", model}, {"prompt", options.prompt},
                           {"n", options.n}, {"max_tokens", options.max_tokens},
                           {"stream", true}, {"stream_options", {{"include_usage", true}}}};
    if (capabilities.token_ids) body["return_token_ids"] = true;
    if (options.min_tokens > 0) body["min_tokens"] = options.min_tokens;
    if (options.ignore_eos) body["ignore_eos"] = true;
    if (options.top_logprobs >= 0) {  // named by id, as the tokens are: the front renders them itself
        body["logprobs"] = options.top_logprobs;
        body["return_tokens_as_token_ids"] = true;
    }
    add_sampling(options, capabilities, body);
    return body;
}

nlohmann::json chat_body(const GenerationOptions& options, const std::string& model,
                         const UpstreamCapabilities& capabilities) {
    nlohmann::json body = nlohmann::json::parse(options.passthrough_chat, nullptr, /*allow_exceptions=*/false);
    if (!body.is_object()) body = nlohmann::json::object();
    body["model"] = model;
    body["n"] = options.n;
    if (options.max_tokens != GenerationOptions::kUpstreamDecides) body["max_tokens"] = options.max_tokens;
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
    if (options.min_tokens > 0) body["min_tokens"] = options.min_tokens;
    if (options.ignore_eos) body["ignore_eos"] = true;
    add_sampling(options, capabilities, body);
    // llama-server refuses -1 ("the whole history"); without a prompt here its own default stands.
    if (capabilities.llamacpp_native && options.dry.active() && options.dry.penalty_last_n < 0)
        body.erase("dry_penalty_last_n");
    return body;
}

}  // namespace tempered::upstream
