// The JSON body of one benchmark request to an OpenAI-compatible server.
//
// Every request sends `max_tokens` and `ignore_eos: true` so that each one generates exactly
// max_tokens tokens whatever the model would rather say (vLLM, SGLang, llama.cpp's server and
// tempered accept ignore_eos; OpenAI itself would reject it). No sampling values are sent: the
// server's defaults apply, as they would for a client that does not care. A streamed request also
// asks for the final usage chunk (`stream_options.include_usage`), which carries the token counts.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tempered::loadgen {

enum class Endpoint {
    Completions,  // POST /v1/completions with "prompt"
    Chat,         // POST /v1/chat/completions with one user message
};

struct RequestSettings {
    Endpoint endpoint = Endpoint::Completions;
    std::string model;
    int64_t max_tokens = 128;
    bool stream = false;
};

std::string_view endpoint_route(Endpoint endpoint);  // "/v1/completions" or "/v1/chat/completions"
std::string_view endpoint_name(Endpoint endpoint);   // "completions" or "chat"

nlohmann::json generation_body(const RequestSettings& settings, const std::string& prompt);

}  // namespace tempered::loadgen
