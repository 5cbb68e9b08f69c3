// POST /v1/completions: the request body parsed into types and checked for shape, type and range.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "api/errors.h"
#include "api/generation_request.h"
#include "api/json_fields.h"

namespace tempered::api {

// One prompt: text to tokenize, or token ids to use as they are.
using PromptInput = std::variant<std::string, std::vector<int32_t>>;

struct CompletionRequest {
    GenerationRequest generation;
    // "prompt": "text" | ["text", ...] | [ids] | [[ids], ...]. A batch gives n choices per prompt;
    // choice index = prompt_index * n + choice_within_prompt (OpenAI's numbering).
    std::vector<PromptInput> prompts;
    bool prompt_is_batch = false;  // "prompt" was an array of prompts (names errors "prompt[i][j]")
    std::optional<int> logprobs;   // top alternatives per token, 0..20 (OpenAI allows 5); nullopt: none
    bool echo = false;             // prepend the prompt to the text (and its logprobs)
    // vLLM's return_token_ids: each choice also carries the ids of its generated tokens ("token_ids", in
    // every stream chunk the ones since the last), end of generation included, so that a front that
    // rendered the prompt (tempered --upstream) reads exactly the tokens this server drew.
    bool return_token_ids = false;
    // vLLM's return_tokens_as_token_ids: logprobs name each token "token_id:<id>" instead of its text,
    // so that tokens with the same text (and partial UTF-8 bytes) stay apart.
    bool return_tokens_as_token_ids = false;
};

inline constexpr int kMaxCompletionLogprobs = 20;

ApiResult<CompletionRequest> parse_completion_request(std::string_view body);

// Checks that need the served model: prompt token ids and logit_bias ids must be < vocab_size.
FieldError validate_completion_request(const CompletionRequest& request, const ModelLimits& limits);

}  // namespace tempered::api
