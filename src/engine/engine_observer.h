// What the engine reports as it works, for metrics and logs. Called on the engine thread: keep it cheap.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "engine/generation.h"

namespace tempered {

enum class RequestOutcome { Stop, Length, Abort, Error, Repetition };
const char* request_outcome_name(RequestOutcome outcome);
// How a request that ended without an error is counted: by its first choice's finish reason.
RequestOutcome finished_outcome(std::optional<FinishReason> first_choice);

struct RequestTimings {
    double queue_seconds = 0;        // submit -> first scheduled
    double first_token_seconds = 0;  // submit -> first token
    double total_seconds = 0;        // submit -> finished
};

class EngineObserver {
public:
    virtual ~EngineObserver() = default;
    virtual void on_prefix_lookup(int64_t prompt_tokens, int64_t cached_tokens) = 0;
    virtual void on_first_token(double seconds_since_submit) = 0;
    virtual void on_inter_token(double seconds) = 0;
    virtual void on_preemption() = 0;
    // Decode side of disaggregation: a request's imported KV could not be placed (the prefix cache lost
    // blocks it had claimed to hold), so its prompt is computed here instead.
    virtual void on_imported_kv_dropped() {}
    // A forward step of a mixture-of-experts model read `expert_weight_bytes` of routed-expert matrices
    // (Model::last_expert_traffic); not called for dense models.
    virtual void on_expert_traffic(int64_t /*expert_weight_bytes*/) {}
    // A sequence's `drafts` were verified in one step and the first `accepted` of them kept (speculation).
    virtual void on_speculation(int64_t /*drafts*/, int64_t /*accepted*/) {}
    // A grammar's token mask took `seconds` to build (one per constrained step that needed one).
    virtual void on_grammar_mask(double /*seconds*/) {}
    // The degeneration guard saw a loop of `period` tokens in one choice and took `action` (once per loop).
    virtual void on_degeneration(DegenerationAction /*action*/, DegenerationPhase /*phase*/, int32_t /*period*/) {}
    // A finished request (its first choice's reason, an error, or abandoned by its client), with the
    // tokens it used so far and its timings. Called before the client sees the request's last event,
    // so metrics read right after a response already include it.
    virtual void on_request_finished(RequestOutcome outcome, const GenerationUsage& usage,
                                     const RequestTimings& timings) = 0;
};

}  // namespace tempered
