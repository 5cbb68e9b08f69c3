#include "sampling/next_token.h"

#include <cmath>

namespace tempered {

SampledToken next_token(std::span<const float> logits, const NextTokenParams& params, const TokenHistory& history,
                        SamplerRng& rng, NextTokenWorkspace& workspace, AllowedTokens allowed) {
    workspace.logits.assign(logits.begin(), logits.end());
    apply_penalties(workspace.logits, params.penalties, history.prompt, history.output);
    apply_dry(workspace.logits, params.dry, history.prompt, history.output, workspace.dry);
    for (int32_t token : history.masked) workspace.logits[static_cast<size_t>(token)] = -INFINITY;
    SampledToken sampled;
    sampled.token = sample_token(workspace.logits, params.sampling, rng, workspace.sampler, allowed);
    if (params.top_logprobs >= 0) sampled.logprob = token_logprob(logits, sampled.token, params.top_logprobs);
    return sampled;
}

}  // namespace tempered
