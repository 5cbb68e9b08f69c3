// Streamed text cut into pieces without a tokenizer, for the loop guard over another engine's chat answer
// (upstream passthrough, where the front sees text, never token ids). A piece is a word (a run of letters,
// digits and non-ASCII bytes) with the spaces before it, or a run of one other character with the spaces before
// it ("|", " ------", "..."), or a run of line ends; each piece becomes an id (FNV-1a of its bytes, 31 bits) that the
// repetition detector reads as it reads token ids. A word is held back until what follows shows it is whole: a chunk
// may end mid-word. Pieces are coarser than tokens (one per word where a tokenizer often has one too) and blind to a
// loop inside a word; bench/results records how the guard's recall over pieces compares with its recall over tokens.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tempered {

class TextPieces {
public:
    // The ids of the pieces `text` completes.
    std::vector<int32_t> push(std::string_view text);
    // The last piece's id, if one is pending: the text has ended.
    std::vector<int32_t> finish();

private:
    std::string pending_;  // the piece in progress: spaces, then a word or one character, or line ends
};

int32_t text_piece_id(std::string_view piece);

}  // namespace tempered
