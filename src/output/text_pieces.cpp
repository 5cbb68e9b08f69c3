#include "output/text_pieces.h"

#include "core/fnv1a.h"

namespace tempered {
namespace {

enum class Kind { Space, LineEnd, Word, Other };

Kind kind_of(char c) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n' || c == '\r') return Kind::LineEnd;
    if (c == ' ' || c == '\t') return Kind::Space;
    if (byte >= 0x80 || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_')
        return Kind::Word;
    return Kind::Other;
}

// The kind of piece `pending` is (its first character after the leading spaces); Space while only spaces.
Kind piece_kind(const std::string& pending) {
    for (char c : pending)
        if (kind_of(c) != Kind::Space) return kind_of(c);
    return Kind::Space;
}

}  // namespace

int32_t text_piece_id(std::string_view piece) {
    Fnv1a hash;
    hash.bytes(piece.data(), piece.size());
    return static_cast<int32_t>(hash.hash() & 0x7FFFFFFF);
}

std::vector<int32_t> TextPieces::push(std::string_view text) {
    std::vector<int32_t> ids;
    for (char c : text) {
        const Kind next = kind_of(c);
        const Kind current = piece_kind(pending_);
        // A piece continues while a word goes on, line ends go on, or only spaces came so far.
        // A run of one punctuation character ("------", "...") is one piece, as a tokenizer keeps it one token.
        const bool continues = pending_.empty() || (current == Kind::Space && next != Kind::LineEnd) ||
                               (current == Kind::Word && next == Kind::Word) ||
                               (current == Kind::LineEnd && next == Kind::LineEnd) ||
                               (current == Kind::Other && c == pending_.back());
        if (!continues) {
            ids.push_back(text_piece_id(pending_));
            pending_.clear();
        }
        pending_ += c;
    }
    return ids;
}

std::vector<int32_t> TextPieces::finish() {
    if (pending_.empty()) return {};
    std::vector<int32_t> ids{text_piece_id(pending_)};
    pending_.clear();
    return ids;
}

}  // namespace tempered
