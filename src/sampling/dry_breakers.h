// DRY's sequence breakers as tokens. A breaker is a string ("\n", ":", "<|im_end|>", a character's name)
// that no repetition may run across. Text is not tokens, so llama.cpp (after koboldcpp) turns each string
// into (head, tail) pairs: every token whose text contains the whole string is a breaker by itself (empty
// tail); every token whose text ends with the start of the string is a head, and the tail is the rest of the
// string as the tokenizer writes it (at most kMaxDryBreakerTail tokens). The same strings give the same
// pairs here, so penalties match llama.cpp's for the same vocabulary.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tempered {

inline constexpr size_t kMaxDryBreakerBytes = 40;  // longer strings are cut, as llama.cpp does
inline constexpr size_t kMaxDryBreakerTail = 20;   // tokens after the head that are checked

struct DryBreakers {
    // head token -> the tokens that must follow it to complete a breaker (empty: the head alone is one).
    std::unordered_multimap<int32_t, std::vector<int32_t>> tails;

    // A token that is a whole breaker by itself; DRY never penalizes it, so the breaker stays sayable.
    bool is_whole_breaker(int32_t token) const;
    bool empty() const { return tails.empty(); }
};

using DryTokenize = std::function<std::vector<int32_t>(std::string_view text)>;

// `token_texts` (vocab): what each token decodes to on its own, special tokens included; `tokenize`: text
// to tokens without special tokens or a bos. Empty strings are skipped.
DryBreakers make_dry_breakers(std::span<const std::string> breakers, std::span<const std::string> token_texts,
                              const DryTokenize& tokenize);

}  // namespace tempered
