// A request inside the engine and its sequences, one per choice. The scheduler decides which of their
// tokens go through the model; postprocess turns the logits into tokens, text and events.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/degeneration_guard.h"
#include "engine/generation.h"
#include "engine/reasoning_phase.h"
#include "grammar/constraint.h"
#include "kv/staged_kv.h"
#include "output/output_processor.h"
#include "sampling/sampler.h"
#include "speculative/draft_policy.h"
#include "speculative/ngram_drafter.h"
#include "tokenizer/streaming_detokenizer.h"

namespace tempered {

using EngineClock = std::chrono::steady_clock;

// One choice of a request: its tokens (prompt + generated) and how many of them are in the KV cache.
// `id` names its blocks in the KV pool.
struct Sequence {
    int32_t id = 0;
    int choice = 0;
    std::vector<int32_t> tokens;
    int64_t prompt_length = 0;
    int64_t computed = 0;  // tokens[0, computed) have keys and values in the cache
    SamplerRng rng;
    StreamingDetokenizer detokenizer;
    // The text side of the choice: the detokenizer's text in; reasoning split, stop strings and tool calls;
    // text and calls out.
    OutputProcessor output;
    // Where the choice is in its request's grammar; it advances only with a token appended to `tokens`,
    // so recomputing after a preemption neither loses nor repeats a step.
    std::optional<grammar::ConstraintState> constraint;
    SequenceGuard guard;  // watches the output for loops (degeneration_guard.h)
    // Inside <think>…</think> or not, and the budget's forced end; null without reasoning handling. Owned
    // by `output`, whose reasoning stage it is; the engine keeps this handle for the budget's forced end.
    // The degeneration guard asks in_reasoning() and calls force_reasoning_end(ForcedEnd::Loop).
    ReasoningPhase* reasoning = nullptr;
    // Prompt-lookup speculation, when on (single-choice requests): the drafter, fed every token of `tokens`,
    // and the drafts this step verifies after the last token (scheduler.h); empty otherwise.
    std::optional<NgramDrafter> drafter;
    // Draft-model speculation instead (--speculative draft, single-choice requests): the draft model's
    // proposal for this step, made by the engine before it schedules (engine/draft_model_drafter.h).
    bool drafts_from_model = false;
    std::vector<int32_t> model_proposal;
    std::vector<int32_t> drafts;
    AcceptanceRate acceptance;  // of its verified drafts: how many are worth verifying next (draft_policy.h)
    bool finished = false;
    std::optional<FinishReason> finish_reason;
    // The grammar's shortest way to a complete sentence was forced to fit the token limit (grammar_closing.h).
    bool closed_early = false;
    EngineClock::time_point last_token_time;

    // Choice i of a request draws from a generator seeded with (options.seed, i), so a seeded request repeats.
    // Its stop strings, grammar, reasoning handling and tool-call family are the request's.
    Sequence(int32_t sequence_id, int choice_index, std::vector<int32_t> all_tokens, int64_t prompt_tokens,
             const GenerationOptions& options, const Tokenizer& tokenizer)
        : id(sequence_id),
          choice(choice_index),
          tokens(std::move(all_tokens)),
          prompt_length(prompt_tokens),
          rng(options.seed, static_cast<uint64_t>(choice_index) * 2 + 1),
          detokenizer(tokenizer, /*skip_special=*/true) {
        if (options.constraint) constraint.emplace(options.constraint);
        OutputOptions output_options{options.stop, nullptr, {}, options.tool_calls};
        if (options.reasoning.enabled()) {
            auto phase = std::make_unique<ReasoningPhase>(options.reasoning);
            reasoning = phase.get();
            output_options.reasoning = std::move(phase);
        }
        output = OutputProcessor(std::move(output_options));
    }

    int64_t generated() const { return static_cast<int64_t>(tokens.size()) - prompt_length; }
    int64_t pending() const { return static_cast<int64_t>(tokens.size()) - computed; }
    bool in_reasoning() const { return reasoning && reasoning->in_reasoning(); }
    void force_reasoning_end(ForcedEnd reason) {
        if (reasoning) reasoning->force_end(reason);
    }
};

struct Request {
    GenerationOptions options;
    std::shared_ptr<GenerationStream> stream;
    std::vector<std::unique_ptr<Sequence>> sequences;  // one until the prefill is done, then n
    bool forked = false;                               // the n choices exist (or n is 1)
    bool ever_admitted = false;
    bool running = false;  // among the scheduler's running requests (else waiting)
    GenerationUsage usage;
    EngineClock::time_point submitted;
    EngineClock::time_point first_scheduled;
    std::optional<EngineClock::time_point> first_token;
    // Disaggregation (kv_transfer.h). Decode side: the prompt's KV from the prefill server, written into
    // the blocks when the request is admitted, then dropped. Prefill side: the prompt's KV went out.
    std::optional<StagedKv> imported_kv;
    int64_t import_blocks = 0;  // while importing: the blocks its KV will take (0: not started yet)
    bool kv_delivered = false;

    bool cancelled() const { return stream->cancelled(); }
    // Every one of the n choices has finished.
    bool all_finished() const {
        for (const auto& sequence : sequences)
            if (!sequence->finished) return false;
        return static_cast<int>(sequences.size()) == options.n;
    }
};

// Sequence ids, unique for the engine's life: the KV pool knows sequences by them.
class SequenceIds {
public:
    int32_t next() { return next_++; }

private:
    int32_t next_ = 0;
};

}  // namespace tempered
