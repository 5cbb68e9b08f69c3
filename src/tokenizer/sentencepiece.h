// SentencePiece-style BPE as llama.cpp runs it for `tokenizer.ggml.model = llama` vocabularies: the
// text (spaces already escaped as U+2581) starts as one symbol per UTF-8 character; the adjacent pair
// whose concatenation is the token with the highest score is merged until no pair forms a token.
// Symbols that are not tokens fall back to <0xXX> byte tokens.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace tempered {

void sentencepiece_encode(std::string_view text, const Vocab& vocab, std::vector<int32_t>& out);

// "▁" for every space.
std::string escape_spaces(std::string_view text);

}  // namespace tempered
