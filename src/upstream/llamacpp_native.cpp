#include "upstream/llamacpp_native.h"

namespace tempered::upstream {

namespace {

// `history`: every token so far and to come, for our -1 ("the whole history"), which llama-server refuses.
void add_dry(const DryParams& dry, int64_t history, nlohmann::json& body) {
    if (!dry.active()) return;
    body["dry_multiplier"] = dry.multiplier;
    body["dry_base"] = dry.base;
    body["dry_allowed_length"] = dry.allowed_length;
    body["dry_penalty_last_n"] = dry.penalty_last_n < 0 ? history : int64_t{dry.penalty_last_n};
    // llama.cpp's default breakers ("\n", ":", "\"", "*") would apply; ours are none unless a request named
    // some (whose strings the front no longer holds: then llama.cpp's defaults stand).
    if (!dry.breakers) body["dry_sequence_breakers"] = nlohmann::json::array();
}

}  // namespace

nlohmann::json llamacpp_completion_body(const GenerationOptions& options) {
    const SamplingParams& sampling = options.sampling;
    const int64_t history = static_cast<int64_t>(options.prompt.size()) + options.max_tokens;
    nlohmann::json body = {{"prompt", options.prompt},
                           {"n_cmpl", options.n},
                           {"n_predict", options.max_tokens},
                           {"stream", true},
                           {"return_tokens", true},
                           {"cache_prompt", true},
                           {"temperature", sampling.temperature},
                           {"top_p", sampling.top_p},
                           {"top_k", sampling.top_k},
                           {"min_p", sampling.min_p},
                           {"typical_p", sampling.typical_p},
                           {"repeat_penalty", options.penalties.repetition},
                           // ours penalizes every token so far, prompt included (llama-server refuses -1)
                           {"repeat_last_n", history},
                           {"presence_penalty", options.penalties.presence},
                           {"frequency_penalty", options.penalties.frequency},
                           {"seed", options.seed}};
    if (options.ignore_eos) body["ignore_eos"] = true;
    if (!sampling.logit_bias.empty()) {
        nlohmann::json bias = nlohmann::json::array();
        for (const auto& [token, value] : sampling.logit_bias) bias.push_back({token, value});
        body["logit_bias"] = std::move(bias);
    }
    add_dry(options.dry, history, body);
    return body;
}

// Fields of the wrong type are read as absent: the chunk is the upstream's, never trusted.
nlohmann::json from_llamacpp_chunk(const nlohmann::json& chunk) {
    if (!chunk.is_object()) return chunk;
    const auto field = [&chunk](const char* name) {
        const auto found = chunk.find(name);
        return found == chunk.end() ? nlohmann::json() : *found;
    };
    nlohmann::json choice = {{"index", field("index").is_number_integer() ? field("index") : nlohmann::json(0)}};
    if (field("content").is_string()) choice["text"] = field("content");
    if (field("tokens").is_array()) choice["token_ids"] = field("tokens");
    if (field("stop") == true) choice["finish_reason"] = field("stop_type") == "limit" ? "length" : "stop";
    return {{"choices", nlohmann::json::array({std::move(choice)})}};
}

}  // namespace tempered::upstream
