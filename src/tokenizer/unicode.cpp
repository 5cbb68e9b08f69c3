#include "tokenizer/unicode.h"

#include <algorithm>
#include <array>
#include <iterator>

namespace tempered {
namespace {

struct ClassRange {
    uint32_t first;
    UnicodeClass unicode_class;
};

constexpr ClassRange kClassRanges[] = {
#include "tokenizer/unicode_categories.inc"
};

constexpr uint32_t kMaxCodePoint = 0x10FFFF;

bool is_continuation(uint8_t byte) { return (byte & 0xC0) == 0x80; }

}  // namespace

UnicodeClass unicode_class(uint32_t code_point) {
    if (code_point > kMaxCodePoint) return UnicodeClass::kUnassigned;
    // The ASCII range is hit for almost every character of real text; answer it from a small table.
    static const std::array<UnicodeClass, 128> ascii = [] {
        std::array<UnicodeClass, 128> table{};
        for (uint32_t c = 0; c < 128; ++c) {
            auto it = std::upper_bound(std::begin(kClassRanges), std::end(kClassRanges), c,
                                       [](uint32_t value, const ClassRange& r) { return value < r.first; });
            table[c] = std::prev(it)->unicode_class;
        }
        return table;
    }();
    if (code_point < 128) return ascii[code_point];
    auto it = std::upper_bound(std::begin(kClassRanges), std::end(kClassRanges), code_point,
                               [](uint32_t value, const ClassRange& r) { return value < r.first; });
    return std::prev(it)->unicode_class;
}

bool unicode_is_whitespace(uint32_t c) {
    if (c < 0x80) return (c >= 0x09 && c <= 0x0D) || c == 0x20;
    switch (c) {
        case 0x85:
        case 0xA0:
        case 0x1680:
        case 0x2028:
        case 0x2029:
        case 0x202F:
        case 0x205F:
        case 0x3000: return true;
        default: return c >= 0x2000 && c <= 0x200A;
    }
}

size_t utf8_sequence_length(uint8_t lead_byte) {
    static constexpr size_t kLengthByHighNibble[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return kLengthByHighNibble[lead_byte >> 4];
}

uint32_t utf8_decode_lenient(std::string_view text, size_t& offset) {
    const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[offset + i]); };
    const size_t left = text.size() - offset;
    const uint8_t lead = byte(0);
    size_t length = 0;
    uint32_t code_point = 0;
    if (lead < 0x80) {
        length = 1;
        code_point = lead;
    } else if ((lead & 0xE0) == 0xC0) {
        length = 2;
        code_point = lead & 0x1F;
    } else if ((lead & 0xF0) == 0xE0) {
        length = 3;
        code_point = lead & 0x0F;
    } else if ((lead & 0xF8) == 0xF0) {
        length = 4;
        code_point = lead & 0x07;
    }
    // A continuation byte as lead, 0xF8..0xFF, a truncated or broken sequence: one replacement character.
    if (length == 0 || length > left) {
        offset += 1;
        return kReplacementCharacter;
    }
    for (size_t i = 1; i < length; ++i) {
        if (!is_continuation(byte(i))) {
            offset += 1;
            return kReplacementCharacter;
        }
        code_point = (code_point << 6) | (byte(i) & 0x3F);
    }
    offset += length;
    return code_point > kMaxCodePoint ? kReplacementCharacter : code_point;
}

std::vector<uint32_t> utf8_to_code_points(std::string_view text) {
    std::vector<uint32_t> code_points;
    code_points.reserve(text.size());
    for (size_t offset = 0; offset < text.size();) code_points.push_back(utf8_decode_lenient(text, offset));
    return code_points;
}

void utf8_append(std::string& out, uint32_t c) {
    if (c < 0x80) {
        out.push_back(static_cast<char>(c));
    } else if (c < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (c >> 6)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (c >> 12)));
        out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (c >> 18)));
        out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
}

}  // namespace tempered
