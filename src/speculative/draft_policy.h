// How many of a drafter's proposals are worth verifying this step. A draft at position i is kept only if
// the previous i - 1 were, so with a per-draft acceptance rate a it adds a^i expected tokens, and it costs
// one more position in the step (plus, from a draft model, its making). With a step costing fixed + per_token * tokens
// and B sequences decoding, the step yields B tokens in fixed + per_token * B; each draft is verified while it raises
// the step's expected tokens per second. At batch 1 on a memory-bound model (per_token small against fixed) any
// plausible draft is; with 32 sequences on a compute-bound step, only drafts that are almost always right.
// So the one rule makes speculation yield to throughput when the batch is large and stop for a sequence
// whose drafts keep failing.
#pragma once

#include <cstdint>

namespace tempered {

// The per-draft acceptance rate of one sequence's drafts, as an exponential moving average of each
// verified position (kept = 1, the first rejected = 0; positions after a rejection say nothing).
class AcceptanceRate {
public:
    static constexpr double kPrior = 0.6;  // a sequence's first drafts: prompt lookup's are right about half the time

    double rate() const { return rate_; }
    // `drafts` were verified and the first `accepted` kept.
    void observe(int64_t drafts, int64_t accepted);
    // A step in which the sequence verified nothing: the rate drifts back to the prior, so a sequence whose
    // drafts failed is tried again later (its text may have become repetitive).
    void idle();

private:
    double rate_ = kPrior;
};

// A decode step as the cost fit sees it (engine/step_cost_model.h), and what drafting one more token for a
// sequence costs before it (a draft model's share of its forward pass; 0 for prompt lookup, or for drafts
// already made).
struct DecodeStep {
    double fixed_seconds = 0;
    double per_token_seconds = 0;
    int64_t decoding_sequences = 1;
    double draft_seconds = 0;
};

// How many of `proposed` drafts to verify: the count that maximises the step's expected tokens per second
// (throughput is unimodal in the count: each draft adds less than the one before and costs the same).
// Every proposed draft when the step's cost is unknown (zero).
int64_t drafts_worth_verifying(double rate, const DecodeStep& step, int64_t proposed);

}  // namespace tempered
