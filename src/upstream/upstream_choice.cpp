#include "upstream/upstream_choice.h"

#include "engine/degeneration_guard.h"

namespace tempered::upstream {

UpstreamChoice::UpstreamChoice(int index, const GenerationOptions& options, const Tokenizer& tokenizer)
    : options_(options),
      tokenizer_(tokenizer),
      sequence_(index, index, options.prompt, static_cast<int64_t>(options.prompt.size()), options, tokenizer) {}

void UpstreamChoice::add_output(OutputDelta out, ChoiceDelta& delta) {
    delta.reasoning_text += out.reasoning;
    delta.text += out.content;
    for (toolcalls::ParsedToolCall& call : out.calls) delta.calls.push_back(std::move(call));
    delta.unparsed_calls += out.unparsed_calls;
    if (out.stopped && !sequence_.finished) {
        sequence_.finished = true;
        sequence_.finish_reason = FinishReason::Stop;
        delta.finish = FinishReason::Stop;
        if (sequence_.reasoning) delta.reasoning = sequence_.reasoning->report();
    }
}

// As the engine's postprocess takes a drawn token (engine/postprocess.cpp): end of generation ends the
// choice without text; any other token's text goes through the output stages, then the guard sees it.
void UpstreamChoice::take_token(int32_t token, ChoiceDelta& delta, EngineObserver* observer) {
    if (sequence_.finished) return;
    delta.tokens.push_back(token);
    sequence_.tokens.push_back(token);
    if (tokenizer_.is_end_of_generation(token) && !options_.ignore_eos) {
        end(FinishReason::Stop, delta);
        return;
    }
    const std::string text = sequence_.detokenizer.push(token);
    add_output(sequence_.output.push({text, token, false}), delta);
    if (guard_generated_token(options_, sequence_, token, delta, observer) && !sequence_.finished)
        end(FinishReason::Repetition, delta);
}

void UpstreamChoice::take_text(std::string_view text, ChoiceDelta& delta) {
    if (sequence_.finished) return;
    add_output(sequence_.output.push({text, std::nullopt, false}), delta);
}

void UpstreamChoice::end(FinishReason reason, ChoiceDelta& delta) {
    if (sequence_.finished) return;
    OutputDelta out = sequence_.output.finish(sequence_.detokenizer.flush());
    out.stopped = false;
    add_output(std::move(out), delta);
    sequence_.finished = true;
    sequence_.finish_reason = reason;
    delta.finish = reason;
    if (sequence_.reasoning) delta.reasoning = sequence_.reasoning->report();
}

}  // namespace tempered::upstream
