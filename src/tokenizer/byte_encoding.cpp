#include "tokenizer/byte_encoding.h"

#include <array>

#include "tokenizer/unicode.h"

namespace tempered {
namespace {

bool stands_for_itself(uint32_t byte) {
    return (byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) || (byte >= 0xAE && byte <= 0xFF);
}

struct ByteTables {
    std::array<uint32_t, 256> code_point_of_byte{};
    std::array<std::string, 256> text_of_byte;
    std::array<int16_t, 324> byte_of_code_point{};  // every mapped code point is below 256 + 68

    ByteTables() {
        byte_of_code_point.fill(-1);
        uint32_t next_extra = 256;
        for (uint32_t byte = 0; byte < 256; ++byte) {
            const uint32_t code_point = stands_for_itself(byte) ? byte : next_extra++;
            code_point_of_byte[byte] = code_point;
            utf8_append(text_of_byte[byte], code_point);
            byte_of_code_point[code_point] = static_cast<int16_t>(byte);
        }
    }
};

const ByteTables& tables() {
    static const ByteTables instance;
    return instance;
}

}  // namespace

const std::string& byte_to_gpt2_char(uint8_t byte) { return tables().text_of_byte[byte]; }

std::optional<uint8_t> gpt2_char_to_byte(uint32_t code_point) {
    const auto& table = tables().byte_of_code_point;
    if (code_point >= table.size() || table[code_point] < 0) return std::nullopt;
    return static_cast<uint8_t>(table[code_point]);
}

std::string gpt2_encode_bytes(std::string_view bytes) {
    const auto& t = tables();
    std::string out;
    out.reserve(bytes.size() * 2);
    for (char c : bytes) out += t.text_of_byte[static_cast<uint8_t>(c)];
    return out;
}

}  // namespace tempered
