// llama-server's own /completion, which the front uses for --upstream-kind llamacpp instead of its OpenAI
// /v1/completions: only the native endpoint returns the generated token ids (return_tokens), so the front
// detokenizes exactly what llama.cpp drew. The body takes llama.cpp's names (n_predict, repeat_penalty, n_cmpl,
// the dry_* family with its sequence breakers); each streamed chunk is rewritten into the OpenAI completion
// chunk the chunk reader takes (chunk_reader.h).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/generation.h"

namespace tempered::upstream {

nlohmann::json llamacpp_completion_body(const GenerationOptions& options);

// {"index", "content", "tokens", "stop", "stop_type"} -> {"choices": [{"index", "text", "token_ids",
// "finish_reason"}]}: "limit" is length, "eos" and "word" stop.
nlohmann::json from_llamacpp_chunk(const nlohmann::json& chunk);

}  // namespace tempered::upstream
