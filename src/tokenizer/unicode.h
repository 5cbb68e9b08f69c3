// Unicode helpers for the tokenizer: a UTF-8 decoder that never fails, UTF-8 encoding, and the character
// classes the pre-tokenizers split on (\p{L}, \p{N}, \s, ...).
//
// The decoder reproduces llama.cpp's, because the text a pre-tokenizer sees decides the token ids: a byte
// that does not start a well-formed sequence becomes U+FFFD and decoding resumes at the next byte. Lead
// bytes are trusted for the length and only continuation bytes are checked (so overlong forms and
// surrogates decode to their code point); a result above U+10FFFF also becomes U+FFFD.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tempered {

constexpr uint32_t kReplacementCharacter = 0xFFFD;

// The general-category major class (the first letter of the category); kUnassigned is Cn.
enum class UnicodeClass : uint8_t {
    kUnassigned,
    kLetter,
    kNumber,
    kSeparator,
    kMark,
    kPunctuation,
    kSymbol,
    kControl,
};

UnicodeClass unicode_class(uint32_t code_point);
// The White_Space property: \s of the pre-tokenizer regexes. Not the same as kSeparator.
bool unicode_is_whitespace(uint32_t code_point);

// Decodes one code point at `offset` and advances it (by 1 on invalid input, returning U+FFFD).
uint32_t utf8_decode_lenient(std::string_view text, size_t& offset);
std::vector<uint32_t> utf8_to_code_points(std::string_view text);
void utf8_append(std::string& out, uint32_t code_point);
// Length a UTF-8 lead byte announces (1 for continuation and invalid bytes), as llama.cpp counts it.
size_t utf8_sequence_length(uint8_t lead_byte);

}  // namespace tempered
