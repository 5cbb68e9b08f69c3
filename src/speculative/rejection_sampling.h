// Speculative sampling's acceptance rule (Leviathan et al. 2023, Chen et al. 2023): a draft token d drawn
// from the draft model's distribution q is kept with probability min(1, p(d) / q(d)), where p is the target
// model's distribution at the same position; on rejection the token is drawn from the residual
// max(0, p - q), normalised. Whatever q is, the token that comes out is distributed exactly as p, so
// speculation changes the speed of sampling, never its result's distribution. p and q are the final
// distributions, after every sampler stage (penalties, bias, grammar mask, temperature, truncation).
//
// A deterministic drafter (prompt lookup) has q one-hot at d: then d is kept with probability p(d) and the
// residual is p without d, which is what drawing from p and comparing with d gives; the engine does that,
// with the request's own random stream, so seeded output is the same with speculation on or off.
#pragma once

#include <cstdint>
#include <span>

namespace tempered {

struct DraftVerdict {
    bool accepted = false;
    int32_t token = -1;  // the draft when accepted, else the token drawn from the residual
};

// `target` and `draft`: probabilities over the vocabulary (each summing to 1); `accept_uniform` and
// `resample_uniform` uniform in [0, 1), from the request's random stream.
DraftVerdict verify_draft(std::span<const float> target, std::span<const float> draft, int32_t draft_token,
                          float accept_uniform, float resample_uniform);

}  // namespace tempered
