// One sequence's next token from its logits: repetition penalties over what it has seen, then DRY over the
// same history (dry.h), the tokens it may not draw yet masked, then the draw (sampler.h: logit bias, the
// allowed-token mask of a grammar, temperature, truncation); with the token's logprobs when asked, taken from
// the raw logits as OpenAI reports them. Everything else about a generated token (timing, text, stop
// strings, finish reasons) is the engine's.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "sampling/dry.h"
#include "sampling/logprobs.h"
#include "sampling/penalties.h"
#include "sampling/sampler.h"

namespace tempered {

inline const DryParams kDryOff{};

struct NextTokenParams {
    const SamplingParams& sampling;
    const PenaltyParams& penalties;
    int top_logprobs = -1;  // < 0: no logprobs; else logprobs with this many alternatives
    const DryParams& dry = kDryOff;
};

// What the sequence has seen, and what it may not draw now (e.g. end of generation while min_tokens
// is unmet, or with ignore_eos).
struct TokenHistory {
    std::span<const int32_t> prompt;
    std::span<const int32_t> output;  // generated so far
    std::span<const int32_t> masked;
};

// Buffers reused across calls, so that a warm step allocates nothing.
struct NextTokenWorkspace {
    std::vector<float> logits;  // (vocab): after penalties and masks
    DryWorkspace dry;
    SamplerWorkspace sampler;
};

struct SampledToken {
    int32_t token = 0;
    std::optional<TokenLogprob> logprob;  // when top_logprobs >= 0
};

// `logits` (vocab) are left as they are. rng advances as sample_token() says. `allowed`: a grammar's
// mask, applied after the logit bias (empty: no grammar); logprobs stay those of the raw logits, so a
// token the grammar forced is reported with the probability the model gave it.
SampledToken next_token(std::span<const float> logits, const NextTokenParams& params, const TokenHistory& history,
                        SamplerRng& rng, NextTokenWorkspace& workspace, AllowedTokens allowed = {});

}  // namespace tempered
