// One streamed chunk of an upstream's /v1/completions, read into the front's choices: each upstream choice's
// token ids (with their logprobs, named "token_id:<id>", when asked for) or, from an engine that returns no
// ids, its text, through the choice's output stages; then the upstream's finish; and the usage.
#pragma once

#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/engine_observer.h"
#include "engine/generation.h"
#include "upstream/upstream_choice.h"

namespace tempered::upstream {

// `leg_choices[i]` is the front's choice that the upstream's choice i feeds (a continuation has one).
// `ended_here` is set when a choice ended on the front before the upstream ended it (a stop string, the guard).
GenerationEvent read_chunk(const nlohmann::json& chunk, std::vector<std::unique_ptr<UpstreamChoice>>& choices,
                           const std::vector<int>& leg_choices, GenerationUsage& usage, EngineObserver* observer,
                           bool& ended_here);

// Whether a choice of the chunk names a token id outside [0, vocab_size): the upstream runs another model (or
// answers nonsense), and the front must not index its vocabulary with it.
bool names_a_foreign_token(const nlohmann::json& chunk, int64_t vocab_size);

// An upstream choice's finish_reason: nullopt while it goes on.
std::optional<FinishReason> upstream_finish_reason(const nlohmann::json& value);

// The cached prompt tokens the upstream reports (prompt_tokens_details), when the chunk carries usage.
void read_usage(const nlohmann::json& chunk, GenerationUsage& usage);

// One upstream choice's logprobs, in token order: "token_id:<id>" names (return_tokens_as_token_ids), each
// token's top alternatives most likely first (ties: lower id first, as our own token_logprob orders them).
std::vector<TokenLogprob> read_logprobs(const nlohmann::json& upstream_choice);

}  // namespace tempered::upstream
