// The next token of a sequence that follows a grammar: drawn from the distribution over the tokens the
// grammar allows (sampler.h applies the mask after the logit bias, before temperature and truncation).
//
// Building the mask is the grammar's cost per step, so greedy decoding skips it when it can: the argmax
// of all logits, when the grammar allows it, is also the argmax of the allowed ones (it is the largest
// value and the lowest id holding it among all tokens, so among any subset containing it too). Only when
// the grammar refuses it is the mask built and the argmax taken again. A random draw always builds the
// mask, so the rng advances exactly as it would for a masked draw and a seed repeats.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "grammar/constraint.h"
#include "grammar/token_mask.h"
#include "sampling/next_token.h"

namespace tempered {

// Buffers reused across steps: the grammar's mask and the same bits as the sampler reads them.
struct ConstrainedDrawWorkspace {
    std::optional<grammar::TokenMask> mask;  // sized by the first constraint's vocabulary
    std::vector<uint64_t> allowed;           // (ceil(vocab / 64))
};

struct ConstrainedToken {
    SampledToken sampled;
    std::optional<double> mask_seconds;  // when a mask was built: how long that took (steady clock)
};

// `state` may be null or inactive (free output): then this is next_token. Does not advance `state`.
ConstrainedToken next_constrained_token(std::span<const float> logits, const NextTokenParams& params,
                                        const TokenHistory& history, grammar::ConstraintState* state, SamplerRng& rng,
                                        NextTokenWorkspace& workspace, ConstrainedDrawWorkspace& constrained);

}  // namespace tempered
