#include "tokenizer/sentencepiece.h"

#include <algorithm>
#include <cstdio>
#include <queue>
#include <string>

#include "tokenizer/unicode.h"

namespace tempered {
namespace {

struct PieceSymbol {
    int32_t prev;
    int32_t next;
    uint32_t begin;
    uint32_t length;  // 0 once merged into its left neighbour
};

struct PieceCandidate {
    float score;
    int32_t left;
    int32_t right;
    uint32_t length;
};

// The highest score first; among equal scores the leftmost pair.
struct LaterPieceCandidate {
    bool operator()(const PieceCandidate& a, const PieceCandidate& b) const {
        return a.score < b.score || (a.score == b.score && a.left > b.left);
    }
};

void append_byte_tokens(std::string_view bytes, const Vocab& vocab, std::vector<int32_t>& out) {
    for (const char c : bytes) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "<0x%02X>", static_cast<unsigned>(static_cast<uint8_t>(c)));
        if (auto token = vocab.find(hex)) {
            out.push_back(*token);
        } else if (auto plain = vocab.find(std::string_view(&c, 1))) {
            out.push_back(*plain);
        } else if (vocab.unknown_id) {
            out.push_back(*vocab.unknown_id);  // llama.cpp throws here; a vocabulary without byte tokens
        }
    }
}

}  // namespace

std::string escape_spaces(std::string_view text) {
    std::string out;
    out.reserve(text.size() + text.size() / 4);
    for (const char c : text) {
        if (c == ' ') {
            out += "\xE2\x96\x81";
        } else {
            out.push_back(c);
        }
    }
    return out;
}

void sentencepiece_encode(std::string_view text, const Vocab& vocab, std::vector<int32_t>& out) {
    std::vector<PieceSymbol> symbols;
    symbols.reserve(text.size());
    for (size_t offset = 0; offset < text.size();) {
        const size_t length = std::min(utf8_sequence_length(static_cast<uint8_t>(text[offset])), text.size() - offset);
        const auto index = static_cast<int32_t>(symbols.size());
        symbols.push_back(PieceSymbol{index - 1, offset + length < text.size() ? index + 1 : -1,
                                      static_cast<uint32_t>(offset), static_cast<uint32_t>(length)});
        offset += length;
    }
    if (symbols.empty()) return;

    std::priority_queue<PieceCandidate, std::vector<PieceCandidate>, LaterPieceCandidate> queue;
    const auto try_queue = [&](int32_t left, int32_t right) {
        if (left < 0 || right < 0) return;
        const uint32_t length = symbols[left].length + symbols[right].length;
        const auto token = vocab.find(text.substr(symbols[left].begin, length));
        if (!token) return;
        queue.push(PieceCandidate{vocab.scores[*token], left, right, length});
    };
    for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) try_queue(i - 1, i);

    while (!queue.empty()) {
        const PieceCandidate candidate = queue.top();
        queue.pop();
        PieceSymbol& left = symbols[candidate.left];
        PieceSymbol& right = symbols[candidate.right];
        if (left.length == 0 || right.length == 0 || left.length + right.length != candidate.length) continue;
        left.length += right.length;
        right.length = 0;
        left.next = right.next;
        if (right.next >= 0) symbols[right.next].prev = candidate.left;
        try_queue(left.prev, candidate.left);
        try_queue(candidate.left, left.next);
    }

    for (int32_t i = 0; i >= 0; i = symbols[i].next) {
        const std::string_view piece = text.substr(symbols[i].begin, symbols[i].length);
        if (const auto token = vocab.find(piece)) {
            out.push_back(*token);
        } else {
            append_byte_tokens(piece, vocab, out);
        }
    }
}

}  // namespace tempered
