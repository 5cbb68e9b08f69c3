#include "edge/request_limits.h"

#include <algorithm>

namespace tempered {
namespace {

// What makes a request's total too large: its n when it asks for several choices, else its prompts
// (a completions batch), else max_tokens itself.
std::string total_param(const api::GenerationRequest& generation, size_t prompts) {
    if (generation.n > 1) return "n";
    if (prompts > 1) return "prompt";
    return generation.max_tokens_param;
}

api::ApiError request_total_exceeded(const RequestLimits& limits, const api::GenerationRequest& generation,
                                     size_t prompts, const std::string& max_tokens_text) {
    const std::string param = total_param(generation, prompts);
    return api::invalid_request("Invalid value for '" + param + "': n (" + std::to_string(generation.n) +
                                    ") x max_tokens (" + max_tokens_text + ") x prompts (" + std::to_string(prompts) +
                                    ") exceeds this server's limit of " + std::to_string(limits.max_request_tokens) +
                                    " completion tokens per request (--max-request-tokens).",
                                param, "invalid_value");
}

}  // namespace

std::optional<api::ApiError> check_prompt_tokens(const RequestLimits& limits, int64_t prompt_tokens,
                                                 const std::string& param) {
    if (limits.max_prompt_tokens <= 0 || prompt_tokens <= limits.max_prompt_tokens) return std::nullopt;
    return api::invalid_request("This server accepts at most " + std::to_string(limits.max_prompt_tokens) +
                                    " prompt tokens (--max-prompt-tokens). However, the " + param + " has " +
                                    std::to_string(prompt_tokens) + " tokens. Please reduce the length of the " +
                                    param + ".",
                                param, "context_length_exceeded");
}

api::ApiResult<int64_t> choice_max_tokens(const RequestLimits& limits, const api::GenerationRequest& generation,
                                          int64_t fallback, size_t prompts) {
    const int64_t choices = static_cast<int64_t>(generation.n) * static_cast<int64_t>(std::max<size_t>(prompts, 1));
    // max_tokens x choices > total, written so that no product can overflow.
    const int64_t per_choice_share = limits.max_request_tokens / choices;
    if (generation.max_tokens.given()) {
        const int64_t asked = *generation.max_tokens.value;
        const std::string& param = generation.max_tokens_param;
        if (limits.max_tokens > 0 && asked > limits.max_tokens) {
            return api::invalid_request("Invalid value for '" + param + "': " + std::to_string(asked) +
                                            " exceeds this server's limit of " + std::to_string(limits.max_tokens) +
                                            " tokens per choice (--max-tokens-limit).",
                                        param, "invalid_value");
        }
        if (limits.max_request_tokens > 0 && asked > per_choice_share)
            return request_total_exceeded(limits, generation, prompts, std::to_string(asked));
        return asked;
    }
    int64_t chosen = fallback;
    if (limits.max_tokens > 0) chosen = std::min(chosen, limits.max_tokens);
    if (limits.max_request_tokens > 0) {
        if (per_choice_share < 1) return request_total_exceeded(limits, generation, prompts, "1");
        chosen = std::min(chosen, per_choice_share);
    }
    return chosen;
}

}  // namespace tempered
