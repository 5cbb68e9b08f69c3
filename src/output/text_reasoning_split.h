// The reasoning split of plain text: a stream without token ids (another engine's, or text a client sent)
// split on the think markers' text. Unlike the split on ids, a marker here may arrive in pieces ("</th",
// "ink>"), so the end of a piece that could be the start of the marker the stream waits for is held back
// until the next piece decides. As on ids, only the marker that changes sides counts: a <think> written
// inside reasoning, or a </think> inside the answer, stays text on its side.
#pragma once

#include <string>
#include <string_view>

#include "output/reasoning_split.h"

namespace tempered {

class TextReasoningSplit final : public ReasoningSplit {
public:
    explicit TextReasoningSplit(bool prompt_opened_reasoning, std::string start_marker = "<think>",
                                std::string end_marker = "</think>");

    ReasoningText on_piece(const OutputPiece& piece) override;
    ReasoningText finish(std::string_view tail) override;
    bool in_reasoning() const override { return in_reasoning_; }

private:
    const std::string& awaited_marker() const { return in_reasoning_ ? end_marker_ : start_marker_; }
    std::string& side(ReasoningText& text) const { return in_reasoning_ ? text.reasoning : text.content; }

    std::string start_marker_;
    std::string end_marker_;
    bool in_reasoning_;
    std::string pending_;  // a tail that may be the start of the awaited marker
};

}  // namespace tempered
