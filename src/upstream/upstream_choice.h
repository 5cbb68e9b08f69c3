// One choice of an upstream generation on the front: the tokens the upstream drew go through the same text
// side as our engine's (engine/sequence.h's detokenizer, output processor and degeneration guard), so the
// reasoning split, stop strings, tool calls and loop detection are the front's whatever engine drew.
//
// Two things cannot be put into the upstream's draw. The reasoning's forced end (engine/reasoning_phase.h:
// the budget, the room under max_tokens, a loop the guard saw inside reasoning): when it is due, the choice
// appends "\n</think>\n\n" itself. The guard's resample: from the loop on, the choice draws with the
// fallback sampling. Either way the choice drops whatever else the upstream draws for it and waits for a
// continuation: a new upstream request whose prompt is the prompt and every token so far (the upstream's
// prefix cache makes it cheap), with what is left of max_tokens and the choice's sampling now
// (upstream_generator.cpp).
//
// A grammar (upstream_grammar.h) goes upstream only on legs that start in the answer: a reasoning model's
// first leg is cut where its reasoning ends and the answer is drawn by a continuation that carries the
// grammar. On such a leg the front's own copy of the constraint checks every token; one it refuses means the
// upstream ignored the grammar (left_grammar(): the request fails as malformed). The guard's resample inside
// a grammar-bound answer ends the choice as `stop` does (finish_reason "repetition"): a continuation could
// not resume the grammar mid-sentence.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/engine_observer.h"
#include "engine/generation.h"
#include "engine/sequence.h"
#include "output/text_pieces.h"
#include "tokenizer/tokenizer.h"

namespace tempered::upstream {

class UpstreamChoice {
public:
    // `grammar_goes_upstream`: the request's constraint can be sent upstream (upstream_grammar.h).
    UpstreamChoice(int index, const GenerationOptions& options, const Tokenizer& tokenizer,
                   bool grammar_goes_upstream = false);

    // One token the upstream drew, into `delta`: its id (and its logprobs, when asked for), its text through
    // the output stages, and the end of the choice if it ends it (end of generation, a stop string, the
    // guard's stop).
    void take_token(int32_t token, ChoiceDelta& delta, EngineObserver* observer,
                    std::optional<TokenLogprob> logprob = std::nullopt);
    // Text without token ids (an upstream that cannot return them): the output stages over the text alone,
    // and the loop guard over it cut into text pieces (output/text_pieces.h).
    void take_text(std::string_view text, ChoiceDelta& delta, EngineObserver* observer = nullptr);
    // Passthrough (a chat chunk): reasoning the upstream split off goes straight to the delta, both through
    // the loop guard's text pieces.
    void take_reasoning_text(std::string_view reasoning, ChoiceDelta& delta, EngineObserver* observer);
    // Passthrough: a piece of the upstream's tool call `index` (OpenAI's stream: the name once, the arguments in
    // pieces); the calls are handed on whole when the choice ends, to be checked as under `flag`. False when
    // the upstream sends more calls or longer arguments than the front keeps.
    bool add_call_piece(size_t index, std::string_view name, std::string_view arguments);
    // The upstream ended the choice: what the detokenizer and the output stages held back comes out. Not
    // while it awaits a continuation: the upstream then ends a leg the front cut.
    void end(FinishReason reason, ChoiceDelta& delta);

    bool finished() const { return sequence_.finished; }
    std::optional<FinishReason> finish_reason() const { return sequence_.finish_reason; }
    int64_t generated() const { return sequence_.generated(); }

    // The forced end was appended: the upstream's further tokens for this choice are dropped, and its
    // content needs a continuation.
    bool awaiting_continuation() const { return awaiting_continuation_; }
    // The continuation's request: the prompt and every token so far; what is left of max_tokens and
    // min_tokens. Taking it clears awaiting_continuation().
    GenerationOptions continuation();

    // Whether the leg now starting (the first, or this choice's continuation) carries the grammar: it does
    // when the grammar can go upstream and the leg starts in the answer.
    bool leg_takes_grammar() const;
    void start_leg(bool grammar_sent) { grammar_on_leg_ = grammar_sent; }
    // The upstream drew a token the grammar it was sent refuses.
    bool left_grammar() const { return left_grammar_; }

private:
    void add_output(OutputDelta out, ChoiceDelta& delta);
    void append_forced_end(ChoiceDelta& delta);
    void finish(FinishReason reason, ChoiceDelta& delta);  // ends the choice here
    void guard_text(std::string_view text, ChoiceDelta& delta, EngineObserver* observer);
    bool resampled() const;  // the guard switched this choice to its fallback sampling
    bool in_answer() const {
        return !sequence_.reasoning ||
               sequence_.reasoning->grammar_applies(sequence_.constraint && sequence_.constraint->lazy());
    }

    const GenerationOptions& options_;
    const Tokenizer& tokenizer_;
    Sequence sequence_;
    bool awaiting_continuation_ = false;
    bool grammar_goes_upstream_;
    bool grammar_on_leg_ = false;
    bool left_grammar_ = false;
    TextPieces text_pieces_;                                // the guard's units where no ids come
    std::vector<toolcalls::ParsedToolCall> pending_calls_;  // passthrough: handed on at the end
};

}  // namespace tempered::upstream
