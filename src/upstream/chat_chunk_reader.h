// One streamed chunk of an upstream's /v1/chat/completions (passthrough, server/chat_passthrough.h), read into
// the front's choices: each choice's content (through the output stages and the text guard), its reasoning
// (vLLM's and llama-server's reasoning_content, or `reasoning`), its tool-call pieces, and its finish; the usage
// chunk's counts (the front has no prompt tokens of its own here).
#pragma once

#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/engine_observer.h"
#include "engine/generation.h"
#include "upstream/upstream_choice.h"

namespace tempered::upstream {

// As read_chunk (chunk_reader.h). `malformed` is set when a choice's tool calls are more or longer than the
// front keeps.
GenerationEvent read_chat_chunk(const nlohmann::json& chunk, std::vector<std::unique_ptr<UpstreamChoice>>& choices,
                                GenerationUsage& usage, EngineObserver* observer, bool& ended_here, bool& malformed);

}  // namespace tempered::upstream
