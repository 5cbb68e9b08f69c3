// GPT-2's byte-to-character table. Byte-level BPE vocabularies spell every byte as one printable
// character so that token texts are valid UTF-8: printable Latin-1 bytes stand for themselves, the other
// 68 bytes (controls, space, 0x7F-0xA0, 0xAD) map in byte order to U+0100, U+0101, ...
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tempered {

// The UTF-8 text of the character that stands for `byte`.
const std::string& byte_to_gpt2_char(uint8_t byte);
// The byte a character (given as its code point) stands for, if it is one of the 256.
std::optional<uint8_t> gpt2_char_to_byte(uint32_t code_point);
// Every byte of `bytes` spelled as its character.
std::string gpt2_encode_bytes(std::string_view bytes);

}  // namespace tempered
