#include "engine/constrained_draw.h"

#include <algorithm>
#include <chrono>

namespace tempered {
namespace {

// The state's mask, as bits the sampler reads; returns the seconds it took.
double build_allowed_tokens(grammar::ConstraintState& state, size_t n_logits, ConstrainedDrawWorkspace& constrained) {
    const auto start = std::chrono::steady_clock::now();
    const size_t n_tokens = state.n_tokens();
    if (!constrained.mask || constrained.mask->size() != n_tokens) constrained.mask.emplace(n_tokens);
    // An empty mask (nothing allowed) is passed on as is: the draw then yields a token the state
    // refuses, and the engine ends the choice there.
    state.fill_mask(*constrained.mask);
    // The same bit layout: copy whole words. Logits past the vocabulary stay disallowed.
    constrained.allowed.assign((n_logits + 63) / 64, 0);
    const std::span<const uint64_t> words = constrained.mask->words();
    std::copy_n(words.begin(), std::min(words.size(), constrained.allowed.size()), constrained.allowed.begin());
    if (n_tokens > n_logits && n_logits % 64 != 0)  // tokens past the logits: no bit may name them
        constrained.allowed.back() &= (uint64_t{1} << (n_logits % 64)) - 1;
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

ConstrainedToken next_constrained_token(std::span<const float> logits, const NextTokenParams& params,
                                        const TokenHistory& history, grammar::ConstraintState* state, SamplerRng& rng,
                                        NextTokenWorkspace& workspace, ConstrainedDrawWorkspace& constrained) {
    if (state == nullptr || !state->active()) return {next_token(logits, params, history, rng, workspace), {}};
    if (is_greedy(params.sampling)) {
        SampledToken unmasked = next_token(logits, params, history, rng, workspace);
        if (state->allows(unmasked.token)) return {std::move(unmasked), {}};
    }
    ConstrainedToken result;
    result.mask_seconds = build_allowed_tokens(*state, logits.size(), constrained);
    result.sampled = next_token(logits, params, history, rng, workspace, constrained.allowed);
    return result;
}

}  // namespace tempered
