// POST /v1/responses (OpenAI's Responses API) read as the chat completions request it amounts to: `input`
// (a string or items: messages, function_call, function_call_output, reasoning) after `instructions` and the
// stored conversation of `previous_response_id` becomes `messages` (a reasoning item rides on the assistant
// message after it, as `reasoning_content`); flat function tools become chat tools, and tool types this server
// cannot run (hosted search, shell, custom) are left out with a warning; `text.format` becomes
// `response_format`, `max_output_tokens` max_tokens, `reasoning.effort` reasoning_effort. Fields the Responses
// API does not define (top_k, seed, repetition_detection, ...) pass on as they came, so the chat parser checks
// every value once, for both APIs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/errors.h"
#include "api/json_fields.h"

namespace tempered::api {

struct ResponsesRequest {
    Json body;         // as sent: the response object echoes its fields
    Json input_items;  // this request's input as items (a string is one user message)
    std::optional<std::string> previous_response_id;
    bool store = true;  // OpenAI's default; Codex sends false
    bool stream = false;
    std::vector<std::string> warnings;  // tools left out, each named
};

// Shapes and types of the Responses fields; what chat also reads is checked by chat's parser.
ApiResult<ResponsesRequest> parse_responses_request(const Json& body);

// The chat completions body over `conversation`: the stored items of the previous response (input, then
// output; empty without one) followed by this request's input. A function_call_output needs an earlier
// function_call with its call_id.
ApiResult<Json> responses_chat_body(const ResponsesRequest& request, const Json& conversation);

// An error chat's parser made, with its param in this API's names (max_tokens -> max_output_tokens,
// response_format -> text.format).
ApiError in_responses_terms(ApiError error);

}  // namespace tempered::api
