// One choice of an upstream generation on the front: the tokens the upstream drew go through the same text
// side as our engine's (engine/sequence.h's detokenizer, output processor and degeneration guard), so the
// reasoning split, stop strings, tool calls and loop detection are the front's whatever engine drew.
// What needs the draw (a reasoning budget's forced end, resample) is not here: the generator refuses it.
#pragma once

#include <cstdint>
#include <string_view>

#include "engine/engine_observer.h"
#include "engine/generation.h"
#include "engine/sequence.h"
#include "tokenizer/tokenizer.h"

namespace tempered::upstream {

class UpstreamChoice {
public:
    UpstreamChoice(int index, const GenerationOptions& options, const Tokenizer& tokenizer);

    // One token the upstream drew, into `delta`: its id, its text through the output stages, and the end
    // of the choice if it ends it (end of generation, a stop string, the guard's stop).
    void take_token(int32_t token, ChoiceDelta& delta, EngineObserver* observer);
    // Text without token ids (an upstream that cannot return them): the output stages over the text alone.
    void take_text(std::string_view text, ChoiceDelta& delta);
    // The upstream ended the choice: what the detokenizer and the output stages held back comes out.
    void end(FinishReason reason, ChoiceDelta& delta);

    bool finished() const { return sequence_.finished; }
    std::optional<FinishReason> finish_reason() const { return sequence_.finish_reason; }
    int64_t generated() const { return sequence_.generated(); }

private:
    void add_output(OutputDelta out, ChoiceDelta& delta);

    const GenerationOptions& options_;
    const Tokenizer& tokenizer_;
    Sequence sequence_;
};

}  // namespace tempered::upstream
