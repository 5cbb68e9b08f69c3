// What a benchmark needs from an OpenAI-compatible response: whether it carries generated text, the
// token counts of its `usage`, and the message of an error. The same reader serves streamed chunks
// (choices[].text, choices[].delta.content) and whole responses (choices[].message.content).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "loadgen/request_body.h"

namespace tempered::loadgen {

struct PayloadContent {
    // Bytes of generated text over all choices. Chat deltas count `content` and the reasoning fields
    // servers stream before it (`reasoning_content`, `reasoning`): a reasoning model's first token is
    // a token all the same. A chunk with only a role, a finish_reason or usage carries none.
    size_t text_bytes = 0;
    std::optional<int64_t> prompt_tokens;      // usage.prompt_tokens
    std::optional<int64_t> completion_tokens;  // usage.completion_tokens
    std::optional<std::string> error;          // the message of an error payload
};

PayloadContent read_payload(const nlohmann::json& payload, Endpoint endpoint);

// The message of an error payload in any of the shapes servers use: OpenAI's {"error": {"message"}},
// {"error": "text"}, vLLM's older {"object": "error", "message"} and FastAPI's {"detail"}.
std::optional<std::string> error_message(const nlohmann::json& payload);

// "HTTP 400: <message>" from a non-2xx response: the envelope's message, else the start of the body.
std::string describe_http_error(int status, std::string_view body);

}  // namespace tempered::loadgen
