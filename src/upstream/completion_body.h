// What one generation asks of the upstream engine, as an OpenAI /v1/completions body: the rendered prompt as
// token ids, each choice's limits, and every sampling value written out, so that the upstream's own
// defaults never decide (the front resolved them: request > preferred > model > OpenAI default, then
// policy). It streams, with usage, and asks for the generated token ids (return_token_ids, vLLM's name and
// tempered's), so the front detokenizes exactly what was drawn and runs its own output stages over it;
// logprobs, when asked, name their tokens by id too (return_tokens_as_token_ids, vLLM's name).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/generation.h"
#include "upstream/upstream_kind.h"

namespace tempered::upstream {

// Only the fields an upstream with `capabilities` takes (upstream_kind.h).
nlohmann::json completion_body(const GenerationOptions& options, const std::string& model,
                               const UpstreamCapabilities& capabilities);

// Passthrough: the chat request's own fields (options.passthrough_chat) with the model, n, max_tokens, streaming
// and every sampling value the upstream takes written out, as for completions.
nlohmann::json chat_body(const GenerationOptions& options, const std::string& model,
                         const UpstreamCapabilities& capabilities);

}  // namespace tempered::upstream
