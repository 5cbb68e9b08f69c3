#include "output/text_reasoning_split.h"

#include <algorithm>
#include <utility>

namespace tempered {
namespace {

// The longest tail of `text` that is a proper prefix of `marker`: it may still become the marker.
size_t marker_start_length(std::string_view text, std::string_view marker) {
    for (size_t length = std::min(marker.size() - 1, text.size()); length > 0; --length)
        if (text.substr(text.size() - length) == marker.substr(0, length)) return length;
    return 0;
}

}  // namespace

TextReasoningSplit::TextReasoningSplit(bool prompt_opened_reasoning, std::string start_marker, std::string end_marker)
    : start_marker_(std::move(start_marker)),
      end_marker_(std::move(end_marker)),
      in_reasoning_(prompt_opened_reasoning) {}

ReasoningText TextReasoningSplit::on_piece(const OutputPiece& piece) {
    ReasoningText out;
    pending_.append(piece.text);
    for (size_t at = pending_.find(awaited_marker()); at != std::string::npos; at = pending_.find(awaited_marker())) {
        side(out).append(pending_, 0, at);
        pending_.erase(0, at + awaited_marker().size());
        in_reasoning_ = !in_reasoning_;
    }
    const size_t keep = marker_start_length(pending_, awaited_marker());
    side(out).append(pending_, 0, pending_.size() - keep);
    pending_.erase(0, pending_.size() - keep);
    return out;
}

// Nothing more comes: a held-back tail was not a marker after all.
ReasoningText TextReasoningSplit::finish(std::string_view tail) {
    ReasoningText out;
    side(out) = std::exchange(pending_, {});
    side(out).append(tail);
    return out;
}

}  // namespace tempered
