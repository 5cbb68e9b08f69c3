// After the forward pass: what each scheduled chunk's logits become. A chunk that completes a prompt or
// a decode step yields one token per choice (an n > 1 request forks its choices there and each draws
// its first token from the shared prefill's logits); the token becomes text through the detokenizer
// and the choice's output processor (reasoning split, stop strings: src/output); the request's reader
// gets an event; finished requests are reported to the observer and get their last event. Also the one
// place a request ends, whatever ends it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/constrained_draw.h"
#include "engine/engine_observer.h"
#include "engine/grammar_closing.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"
#include "kv/kv_block_pool.h"
#include "models/model_config.h"
#include "sampling/next_token.h"
#include "tokenizer/tokenizer.h"

namespace tempered {

class Postprocessor {
public:
    // Everything given must outlive the postprocessor; `observer` may be null.
    // `transfer_ready` wakes the engine when a KV transfer has news (any thread may call it).
    Postprocessor(const Tokenizer& tokenizer, const ModelConfig& config, KvBlockPool& kv, EngineObserver* observer,
                  SequenceIds& sequence_ids, std::function<void()> transfer_ready = {});

    struct Applied {
        std::span<Request* const> finished;  // already ended
        // Done generating (blocks released) but their last event waits for their KV export to land.
        std::span<Request* const> awaiting_export;
    };
    // Applies a step whose forward pass returned `forward` and, if it succeeded, wrote `logits`
    // (one row of vocab for each chunk that completes its sequence, in plan order). Returns the
    // requests that finished (all, if the forward pass failed); valid until the next call.
    Applied apply(const StepPlan& plan, const Status& forward, const float* logits);

    // Ends `request`: frees its blocks, drops its KV transfer if one is still open, reports it, and
    // sends its last event (an error if given).
    void finish(Request& request, std::optional<std::string> error = std::nullopt);
    // Its reader is gone: only the observer hears of it.
    void abandon(Request& request);

private:
    void emit_next_tokens(Request& request, Sequence& sequence, const float* logits);
    size_t verify_drafts(Request& request, Sequence& sequence, int64_t drafts, const float* logits, size_t row);
    void deliver_prompt_kv(Request& request, const Sequence& sequence);
    void fork_choices(Request& request);
    ChoiceDelta sample(Request& request, Sequence& sequence, const float* logits);
    std::optional<SampledToken> forced_reasoning_token(const GenerationOptions& options, Sequence& sequence,
                                                       std::span<const float> logits);
    void take_token(Request& request, Sequence& sequence, SampledToken next, bool forced, ChoiceDelta& delta);
    // A token of the grammar's shortest way to a complete sentence, taken instead of a draw (grammar_closing.h).
    void take_closing_token(Request& request, Sequence& sequence, int32_t token, std::span<const float> logits,
                            ChoiceDelta& delta);
    void record_token_time(Request& request, Sequence& sequence);
    void append_text(const Request& request, Sequence& sequence, int32_t token, bool forced, ChoiceDelta& delta);
    void end_refused_by_grammar(Sequence& sequence, ChoiceDelta& delta);
    void end_where_it_is(Sequence& sequence, ChoiceDelta& delta, FinishReason reason);
    void report_finished(Request& request, RequestOutcome outcome);

    const Tokenizer& tokenizer_;
    const ModelConfig& config_;
    KvBlockPool& kv_;
    EngineObserver* observer_;
    SequenceIds& sequence_ids_;
    std::vector<int32_t> end_of_generation_tokens_;  // masked while min_tokens is unmet or with ignore_eos
    NextTokenWorkspace workspace_;
    ConstrainedDrawWorkspace constrained_workspace_;
    GrammarClosing closing_;
    std::vector<Request*> touched_;  // requests with a chunk in this step, in plan order
    std::vector<Request*> finished_;
    std::vector<Request*> awaiting_export_;
    std::function<void()> transfer_ready_;
};

}  // namespace tempered
