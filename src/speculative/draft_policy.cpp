#include "speculative/draft_policy.h"

namespace tempered {

namespace {
constexpr double kLearningRate = 0.2;  // weight of the newest verified position
constexpr double kIdleDrift = 0.05;    // per idle step, toward the prior
}  // namespace

void AcceptanceRate::observe(int64_t drafts, int64_t accepted) {
    for (int64_t i = 0; i < accepted; ++i) rate_ += kLearningRate * (1.0 - rate_);
    if (accepted < drafts) rate_ += kLearningRate * (0.0 - rate_);
}

void AcceptanceRate::idle() { rate_ += kIdleDrift * (kPrior - rate_); }

int64_t drafts_worth_verifying(double rate, const DecodeStep& step, int64_t proposed) {
    double tokens = static_cast<double>(step.decoding_sequences);
    double seconds = step.fixed_seconds + step.per_token_seconds * tokens;
    if (seconds <= 0) return proposed;
    double expected = 1.0;
    int64_t count = 0;
    for (; count < proposed; ++count) {
        expected *= rate;
        const double more_seconds = seconds + step.per_token_seconds + step.draft_seconds;
        if ((tokens + expected) / more_seconds <= tokens / seconds) break;
        tokens += expected;
        seconds = more_seconds;
    }
    return count;
}

}  // namespace tempered
