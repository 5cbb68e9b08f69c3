// Synthetic prompts of an exact token count, when the server can tell us how it tokenizes (POST
// /tokenize). A word of prompt_words.h is about one token, not exactly: the first word has no leading
// space, a tokenizer may add BOS, a vocabulary may split a word. So a prompt is built from a guess of
// its word count and corrected by what the server counts, word by word, for a few rounds.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/result.h"

namespace tempered::loadgen {

// The tokens the server would see for a prompt of this text, or why it cannot say.
using TokenCounter = std::function<Result<int64_t>(const std::string& text)>;

struct CalibratedPrompt {
    std::string text;
    int64_t words = 0;
    int64_t tokens = 0;  // as the counter counted them
};

// Prompt `index` (synthetic_prompt(seed, index, words)) with `target_tokens` tokens by the counter,
// starting from `first_guess_words` words. When no word count hits the target (a two-token word can
// step over it), the closest count wins, the shorter on a tie. Fails only when the counter fails.
Result<CalibratedPrompt> calibrate_prompt(const TokenCounter& count_tokens, uint64_t seed, uint64_t index,
                                          int64_t target_tokens, int64_t first_guess_words);

}  // namespace tempered::loadgen
