#include "output/token_shapes.h"

#include "core/fnv1a.h"

namespace tempered {
namespace {

bool whitespace_char(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool digit_char(char c) { return c >= '0' && c <= '9'; }

// The number unit of one token's text (TokenShapes::number_unit), 0 when it is not whitespace then digits.
int32_t number_unit_of(std::string_view text) {
    size_t digits_at = 0;
    while (digits_at < text.size() && whitespace_char(text[digits_at])) ++digits_at;
    if (digits_at == text.size()) return 0;
    for (size_t i = digits_at; i < text.size(); ++i)
        if (!digit_char(text[i])) return 0;
    if (digits_at == 0) return -2;
    Fnv1a hash;
    hash.bytes(text.data(), digits_at);
    return -3 - static_cast<int32_t>(hash.hash() & 0xFFFFF);  // -3 and below: one unit per whitespace
}

}  // namespace

TokenShapes::TokenShapes(const std::vector<std::string>& token_texts) {
    number_unit_.reserve(token_texts.size());
    offsets_.reserve(token_texts.size() + 1);
    for (const std::string& text : token_texts) {
        number_unit_.push_back(number_unit_of(text));
        offsets_.push_back(static_cast<uint32_t>(bytes_.size()));
        bytes_ += text;
    }
    offsets_.push_back(static_cast<uint32_t>(bytes_.size()));
}

int32_t TokenShapes::number_unit(int32_t token) const {
    if (token < 0 || static_cast<size_t>(token) >= number_unit_.size()) return 0;
    return number_unit_[static_cast<size_t>(token)];
}

bool TokenShapes::continues_number(int32_t token) const { return number_unit(token) == -2; }

std::string_view TokenShapes::bytes(int32_t token) const {
    if (token < 0 || static_cast<size_t>(token) + 1 >= offsets_.size()) return {};
    const auto id = static_cast<size_t>(token);
    return std::string_view(bytes_).substr(offsets_[id], offsets_[id + 1] - offsets_[id]);
}

}  // namespace tempered
