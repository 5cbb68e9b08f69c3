// The reasoning split of a stream that carries token ids of our vocabulary, without the engine's budget:
// reasoning::ReasoningSplitter behind the output processor's stage interface.
#pragma once

#include "output/reasoning_split.h"
#include "reasoning/reasoning_parser.h"

namespace tempered {

class TokenReasoningSplit final : public ReasoningSplit {
public:
    TokenReasoningSplit(reasoning::ThinkTokens markers, bool prompt_opened_reasoning)
        : splitter_(markers, prompt_opened_reasoning) {}

    // A piece without its token cannot be a marker: its text goes to the side the stream is on.
    ReasoningText on_piece(const OutputPiece& piece) override {
        reasoning::SplitText split;
        if (piece.token)
            splitter_.feed(*piece.token, piece.text, split);
        else
            (splitter_.in_reasoning() ? split.reasoning : split.content) += piece.text;
        return {std::move(split.reasoning), std::move(split.content)};
    }
    ReasoningText finish(std::string_view tail) override {
        reasoning::SplitText split;
        splitter_.finish(tail, split);
        return {std::move(split.reasoning), std::move(split.content)};
    }
    bool in_reasoning() const override { return splitter_.in_reasoning(); }

private:
    reasoning::ReasoningSplitter splitter_;
};

}  // namespace tempered
