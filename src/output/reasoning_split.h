// The output processor's first stage: on which side of a reasoning model's <think>…</think> each piece of
// a choice's output falls. What splits depends on where the stream comes from:
//   - our engine: engine/reasoning_phase (the split on marker ids, plus the budget and its forced end);
//   - a stream with token ids from our vocabulary: TokenReasoningSplit, the same split without a budget;
//   - plain text (another engine's stream, no ids): TextReasoningSplit, the markers found by their text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tempered {

// One piece of a choice's output as it arrives: its text (what the detokenizer gave, or what another
// engine streamed) and, when the source has them, the token that brought it. `forced`: the engine appended
// the token instead of drawing it (the reasoning budget's forced end).
struct OutputPiece {
    std::string_view text;
    std::optional<int32_t> token;
    bool forced = false;
};

// Text that arrived with a piece, split by side.
struct ReasoningText {
    std::string reasoning;
    std::string content;
};

class ReasoningSplit {
public:
    virtual ~ReasoningSplit() = default;

    // The piece's text, on its side; a marker switches sides, its own text on neither.
    virtual ReasoningText on_piece(const OutputPiece& piece) = 0;
    // The output ended; `tail` is text the source still held (the detokenizer's unfinished character).
    virtual ReasoningText finish(std::string_view tail) = 0;
    // Inside reasoning now.
    virtual bool in_reasoning() const = 0;
};

}  // namespace tempered
