// Where one choice is in its reasoning (<think>…</think>, or harmony's analysis channel), and the budget that
// guarantees it an answer.
//
// The engine keeps a handle on the phase because the budget needs it: the forced end is a token the sampler
// must not draw. The choice's output processor (output/output_processor.h) runs it as its reasoning stage:
// the split of text into reasoning and content (reasoning::ReasoningSplitter or HarmonySplitter, on token ids)
// decides what the stop matcher and the grammar see.
//
// The forced end. The server tokenizes "\n</think>\n\n" (</think> one token), for harmony
// "<|end|><|start|>assistant<|channel|>final<|message|>" (the analysis message closed, the final one opened);
// instead of drawing, the engine appends those tokens one per step when
//   (a) the reasoning has drawn `budget` tokens (ForcedEnd::Budget);
//   (b) the room left under max_tokens is no more than the forced end plus one content token, so content
//       always comes (ForcedEnd::MaxTokens);
//   (c) something outside (the degeneration guard) saw a loop inside reasoning (ForcedEnd::Loop).
// A model that writes </think> itself ends reasoning normally (no forced end).
//
// How the numbers add up. "Drawn reasoning tokens" are the tokens the model drew while inside
// reasoning, the markers and forced tokens not included. With budget N and max_tokens at least
// N + forced end + 1 (+1 when the model opens <think> itself), reasoning has exactly N drawn tokens, then
// the forced end, then at least one drawn content token. Forced tokens count toward max_tokens and
// completion_tokens like any other. When max_tokens is smaller than the forced end + 1, the forced end
// starts at the first token and is cut by max_tokens where it falls (finish_reason "length"): nothing is
// drawn, and the content is what of the forced end's tail fits (possibly none).
//
// Content always comes: while inside reasoning (and for the first content token after reasoning ends)
// end-of-generation tokens are masked, so a choice that reasoned ends only after drawing content (or
// when max_tokens or a stop string ends it). No grammar applies inside reasoning or to the forced end:
// the grammar starts at the first drawn content token. Stop strings are matched on content only.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "output/reasoning_split.h"
#include "reasoning/harmony_splitter.h"
#include "reasoning/reasoning_parser.h"

namespace tempered {

enum class ForcedEnd { Budget, MaxTokens, Loop };
const char* forced_end_name(ForcedEnd reason);  // "budget" | "max_tokens" | "loop"

// How a request's output is read for reasoning: <think> markers or harmony's (at most one of the two). Neither:
// no reasoning handling at all.
struct ReasoningOptions {
    std::optional<reasoning::ThinkTokens> markers;
    std::optional<reasoning::HarmonyTokens> harmony;
    bool prompt_opens_reasoning = false;  // the template ended the prompt inside <think>
    std::optional<int64_t> budget;        // drawn reasoning tokens; nullopt: unlimited
    std::vector<int32_t> forced_end;      // "\n</think>\n\n" as ids; empty: just the closing marker

    bool enabled() const { return markers.has_value() || harmony.has_value(); }
    int32_t closing_marker() const { return markers ? markers->end : harmony ? harmony->end : -1; }
};

// A choice's reasoning, reported on its finishing delta when reasoning handling is on.
struct ReasoningReport {
    bool reasoned = false;                // the choice was inside reasoning at some point
    int64_t tokens = 0;                   // drawn reasoning tokens
    std::optional<int64_t> budget;        // the budget it ran under
    std::optional<ForcedEnd> forced_end;  // nullopt: reasoning ended by itself (or never began)
    int64_t reasoning_tokens = 0;         // for usage: every token inside reasoning, markers included
};

// The output processor's reasoning stage for our engine's tokens (output/reasoning_split.h): the choice's
// output processor owns it and the engine keeps a handle, for the budget.
class ReasoningPhase final : public ReasoningSplit {
public:
    explicit ReasoningPhase(ReasoningOptions options);

    // Inside reasoning now (the forced end's </think> not yet appended).
    bool in_reasoning() const override { return splitter_->in_reasoning(); }
    // Ends reasoning by force from the next token on (no-op outside reasoning or once forcing).
    void force_end(ForcedEnd reason);

    // Before drawing the next token: the token to append instead, if the forced end is due. `generated`
    // tokens so far, `max_tokens` the request's limit.
    std::optional<int32_t> forced_token(int64_t generated, int64_t max_tokens);
    // The tokens the next draws will append without drawing, in order: the rest of the forced end while it is
    // being appended, all of it when it is due at the next draw; none otherwise. Certain drafts (speculation).
    std::span<const int32_t> forced_tokens_ahead(int64_t generated, int64_t max_tokens) const;
    // End-of-generation tokens must be masked for the next draw (inside reasoning, or first content token).
    bool masks_end_of_generation() const;
    // The grammar applies to the next draw only outside reasoning and its forced end: a grammar that waits for its
    // trigger (`lazy`: tool calls under tool_choice auto) anywhere else, one that holds from the start (response
    // formats) only inside the answer proper (harmony: the final message's body, not the headers before it).
    bool grammar_applies(bool lazy) const { return (lazy ? !in_reasoning() : splitter_->in_answer()) && !forcing(); }

    // A token was appended (`forced`: from forced_token()); `text` is what the detokenizer gave for it.
    ReasoningText on_token(int32_t token, bool forced, std::string_view text);
    // The same for the output processor; the engine's pieces always carry their token.
    ReasoningText on_piece(const OutputPiece& piece) override {
        return on_token(piece.token.value_or(-1), piece.forced, piece.text);
    }
    // The output ended; `tail` is what the detokenizer still held.
    ReasoningText finish(std::string_view tail) override;

    ReasoningReport report() const;

private:
    bool forcing() const { return forced_reason_.has_value() && forced_position_ < forced_end_.size(); }
    // Why the forced end must begin at the next draw (by the budget or max_tokens), if it must.
    std::optional<ForcedEnd> forced_end_due(int64_t generated, int64_t max_tokens) const;

    ReasoningOptions options_;
    std::unique_ptr<reasoning::TokenSplitter> splitter_;
    std::vector<int32_t> forced_end_;
    bool reasoned_ = false;
    int64_t drawn_ = 0;          // drawn reasoning tokens
    int64_t content_drawn_ = 0;  // content tokens drawn after reasoning ended
    std::optional<ForcedEnd> forced_reason_;
    size_t forced_position_ = 0;  // the next forced token's index in forced_end_
};

}  // namespace tempered
