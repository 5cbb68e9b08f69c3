// What the loop guard's shape channels (loop_channel.h) need to know of each vocabulary token: whether it is
// a number (digits, with or without the whitespace before them), and its bytes, from which a JSON answer's
// structure is read. Built once per model from the vocabulary's decoded texts.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tempered {

class TokenShapes {
public:
    // `token_texts`: each id's decoded text, in id order.
    explicit TokenShapes(const std::vector<std::string>& token_texts);

    // For a token made of ASCII digits after optional ASCII whitespace ("7", " 73", "\n1"): the unit a number
    // with that whitespace before it stands for (negative, so never a token id; equal for equal whitespace);
    // 0 for any other token or an id outside the vocabulary.
    int32_t number_unit(int32_t token) const;
    // The token continues a number just before it: digits with no whitespace ("0" after "1" in "10").
    bool continues_number(int32_t token) const;
    std::string_view bytes(int32_t token) const;

private:
    std::vector<int32_t> number_unit_;  // (n_tokens)
    std::string bytes_;                 // every token's bytes, one after another
    std::vector<uint32_t> offsets_;     // (n_tokens + 1) where each token's bytes start
};

}  // namespace tempered
