// Splits text at special tokens before the model's encoder sees it, with llama.cpp's rules: control,
// unknown and user-defined tokens take part (control and unknown ones only when parsing specials);
// longer tokens claim their occurrences first, and each token claims its occurrences left to right in
// the text that no earlier token claimed. One trie pass finds every occurrence of every special token,
// so the cost does not grow with their number (Gemma 3 has over six thousand).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/vocab.h"

namespace tempered {

struct TextFragment {
    int32_t token = -1;  // a special token, or -1 for text still to encode
    size_t offset = 0;   // bytes of the input the fragment covers
    size_t length = 0;
};

class SpecialTokenMatcher {
public:
    SpecialTokenMatcher() = default;
    explicit SpecialTokenMatcher(const Vocab& vocab);

    std::vector<TextFragment> partition(std::string_view text, const Vocab& vocab, bool parse_special) const;

    // Special tokens in claim order (longest text first, then lowest id).
    const std::vector<int32_t>& tokens() const { return specials_; }

private:
    int32_t child(int32_t node, uint8_t byte) const;

    std::vector<int32_t> specials_;
    std::vector<int32_t> node_special_;  // (n_nodes) index into specials_ of the token ending here, or -1
    std::array<int32_t, 256> root_children_{};
    std::unordered_map<uint64_t, int32_t> children_;  // (node << 8 | byte) -> node, below the root
};

}  // namespace tempered
