// Pre-tokenizers of byte-level BPE: split text into words before merges run, so that no token crosses a
// word boundary. Each `tokenizer.ggml.pre` name selects a list of passes; every pass splits each piece
// left by the previous pass further. The passes are hand-written matchers with the semantics of the
// regexes llama.cpp associates with the name (including its quirks), over code points classified by the
// Unicode 15.1 table in unicode.h.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace tempered {

enum class PreTokenizerPass : uint8_t {
    kGpt2,    // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
    kLlama3,  // (?i:'s|...)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
    kQwen2,   // as kLlama3 with \p{N} instead of \p{N}{1,3}
    // GPT-4o / o200k (gpt-oss), as llama.cpp writes it, with U = a letter but a-z, L = a letter but A-Z:
    // [^\r\n\p{L}\p{N}]?U*L+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?U+L*(?i:...)?|\p{N}{1,3}|
    // ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
    kGpt4o,
    kEachDigit,          // \p{N}
    kDigitRuns,          // \p{N}+
    kAsciiDigitTriples,  // [0-9][0-9][0-9]
    kPunctuationRuns,    // [\p{P}\$\+<=>\^~\|]+
};

struct PreTokenizer {
    std::vector<PreTokenizerPass> passes;
    bool clean_spaces = false;   // detokenizer removes the space before , . ! ? and some contractions
    bool ignore_merges = false;  // a word that is itself a token is emitted whole
    bool add_bos = false;        // the default before the GGUF's add_bos_token is read

    // The pre-tokenizer for a `tokenizer.ggml.pre` value; an Error for names not supported.
    static Result<PreTokenizer> from_name(std::string_view name);

    // Splits `code_points` into words; returns the length of each word in code points, in order.
    std::vector<size_t> split(std::span<const uint32_t> code_points) const;
};

}  // namespace tempered
