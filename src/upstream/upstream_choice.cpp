#include "upstream/upstream_choice.h"

#include "engine/degeneration_guard.h"

namespace tempered::upstream {

UpstreamChoice::UpstreamChoice(int index, const GenerationOptions& options, const Tokenizer& tokenizer,
                               bool grammar_goes_upstream)
    : options_(options),
      tokenizer_(tokenizer),
      sequence_(index, index, options.prompt, static_cast<int64_t>(options.prompt.size()), options, tokenizer),
      grammar_goes_upstream_(grammar_goes_upstream && options.constraint) {}

bool UpstreamChoice::leg_takes_grammar() const { return grammar_goes_upstream_ && in_answer(); }

void UpstreamChoice::add_output(OutputDelta out, ChoiceDelta& delta) {
    delta.reasoning_text += out.reasoning;
    delta.text += out.content;
    for (toolcalls::ParsedToolCall& call : out.calls) delta.calls.push_back(std::move(call));
    delta.unparsed_calls += out.unparsed_calls;
    if (out.stopped && !sequence_.finished) {
        sequence_.finished = true;
        sequence_.finish_reason = FinishReason::Stop;
        delta.finish = FinishReason::Stop;
        delta.stop_string = std::move(out.stop_string);
        if (sequence_.reasoning) delta.reasoning = sequence_.reasoning->report();
    }
}

// As the engine's postprocess takes a drawn token (engine/postprocess.cpp): end of generation ends the
// choice without text; any other token's text goes through the output stages, then the guard sees it.
void UpstreamChoice::take_token(int32_t token, ChoiceDelta& delta, EngineObserver* observer,
                                std::optional<TokenLogprob> logprob) {
    if (sequence_.finished || awaiting_continuation_) return;
    const bool was_in_answer = in_answer();
    if (grammar_on_leg_ && was_in_answer && !sequence_.constraint->accept(token)) {
        left_grammar_ = true;
        return;
    }
    if (logprob) delta.logprobs.push_back(std::move(*logprob));
    delta.tokens.push_back(token);
    sequence_.tokens.push_back(token);
    if (tokenizer_.is_end_of_generation(token) && !options_.ignore_eos) {
        finish(FinishReason::Stop, delta);
        return;
    }
    const std::string text = sequence_.detokenizer.push(token);
    add_output(sequence_.output.push({text, token, false}), delta);
    const bool had_switched = resampled();
    if (guard_generated_token(options_, sequence_, token, delta, observer) && !sequence_.finished) {
        finish(FinishReason::Repetition, delta);
        return;
    }
    if (sequence_.finished || sequence_.generated() >= options_.max_tokens) return;
    // The guard's resample: the rest is drawn with its fallback sampling, by a continuation.
    if (resampled() && !had_switched) {
        if (grammar_on_leg_ && was_in_answer) return finish(FinishReason::Repetition, delta);
        awaiting_continuation_ = true;
    }
    // The reasoning ended on this leg, which carries no grammar: the answer comes from one that does.
    if (grammar_goes_upstream_ && !grammar_on_leg_ && !was_in_answer && in_answer()) awaiting_continuation_ = true;
    append_forced_end(delta);
}

bool UpstreamChoice::resampled() const {
    return sequence_.guard.report() && sequence_.guard.report()->resampled.has_value();
}

// As the engine does before each draw (engine/postprocess.cpp), but all at once: the upstream cannot be
// told to draw these, so they are appended here and the rest comes from a continuation.
void UpstreamChoice::append_forced_end(ChoiceDelta& delta) {
    if (!sequence_.reasoning) return;
    while (const auto token = sequence_.reasoning->forced_token(sequence_.generated(), options_.max_tokens)) {
        awaiting_continuation_ = true;
        delta.tokens.push_back(*token);
        sequence_.tokens.push_back(*token);
        const std::string text = sequence_.detokenizer.push(*token);
        add_output(sequence_.output.push({text, *token, true}), delta);
        if (sequence_.finished) break;
        if (sequence_.generated() >= options_.max_tokens) {
            finish(FinishReason::Length, delta);
            break;
        }
    }
}

GenerationOptions UpstreamChoice::continuation() {
    awaiting_continuation_ = false;
    GenerationOptions next = options_;
    next.prompt = sequence_.tokens;  // the prompt, then every token of this choice
    next.n = 1;
    next.sampling = sequence_sampling(options_, sequence_);  // the guard's fallback once it resampled
    next.dry = sequence_dry(options_, sequence_);
    next.max_tokens = options_.max_tokens - sequence_.generated();
    next.min_tokens = std::max<int64_t>(0, options_.min_tokens - sequence_.generated());
    return next;
}

void UpstreamChoice::take_text(std::string_view text, ChoiceDelta& delta, EngineObserver* observer) {
    // An empty piece (an engine's first chunk, a keep-alive) is no token: the reasoning must not count it.
    if (sequence_.finished || awaiting_continuation_ || text.empty()) return;
    add_output(sequence_.output.push({text, std::nullopt, false}), delta);
    guard_text(text, delta, observer);
}

void UpstreamChoice::take_reasoning_text(std::string_view reasoning, ChoiceDelta& delta, EngineObserver* observer) {
    if (sequence_.finished || reasoning.empty()) return;
    delta.reasoning_text += reasoning;
    guard_text(reasoning, delta, observer);
}

// The guard over text: each whole piece is one unit of its detector, as a token id is (its counts in the
// degeneration report are pieces then). A loop it stops ends the choice here; resample needs ids (refused
// before a passthrough request is made).
void UpstreamChoice::guard_text(std::string_view text, ChoiceDelta& delta, EngineObserver* observer) {
    for (const int32_t piece : text_pieces_.push(text)) {
        if (sequence_.finished) return;
        if (guard_generated_token(options_, sequence_, piece, delta, observer) && !sequence_.finished)
            return finish(FinishReason::Repetition, delta);
    }
}

bool UpstreamChoice::add_call_piece(size_t index, std::string_view name, std::string_view arguments) {
    constexpr size_t kMaxCalls = 128;
    constexpr size_t kMaxArgumentBytes = size_t{1} << 20;
    if (index >= kMaxCalls) return false;
    if (pending_calls_.size() <= index) pending_calls_.resize(index + 1);
    toolcalls::ParsedToolCall& call = pending_calls_[index];
    call.name += name;
    if (call.arguments.size() + arguments.size() > kMaxArgumentBytes) return false;
    call.arguments += arguments;
    return true;
}

void UpstreamChoice::end(FinishReason reason, ChoiceDelta& delta) {
    if (!awaiting_continuation_) finish(reason, delta);  // else that leg was cut: its end is not the choice's
}

void UpstreamChoice::finish(FinishReason reason, ChoiceDelta& delta) {
    if (sequence_.finished) return;
    awaiting_continuation_ = false;
    OutputDelta out = sequence_.output.finish(sequence_.detokenizer.flush());
    out.stopped = false;
    add_output(std::move(out), delta);
    for (toolcalls::ParsedToolCall& call : pending_calls_) delta.calls.push_back(std::move(call));
    pending_calls_.clear();
    sequence_.finished = true;
    sequence_.finish_reason = reason;
    delta.finish = reason;
    if (sequence_.reasoning) delta.reasoning = sequence_.reasoning->report();
    // The loop report as it stands at the end (its repeats grew since it was first sent), as our engine
    // sends it with the finishing token.
    if (sequence_.guard.report()) delta.degeneration = sequence_.guard.report();
}

}  // namespace tempered::upstream
