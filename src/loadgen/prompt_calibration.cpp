#include "loadgen/prompt_calibration.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <set>

#include "loadgen/prompt_words.h"

namespace tempered::loadgen {
namespace {

// One round usually suffices (each word is one token); a few more cover words that split.
constexpr int kMaxRounds = 8;

bool closer(const CalibratedPrompt& candidate, const CalibratedPrompt& best, int64_t target) {
    const int64_t a = std::llabs(candidate.tokens - target), b = std::llabs(best.tokens - target);
    return a < b || (a == b && candidate.tokens < best.tokens);
}

// Words to add (or drop) to go from the candidate's count to the target, at the candidate's tokens per
// word: a vocabulary that splits words must not make the correction overshoot by the same factor.
int64_t word_step(const CalibratedPrompt& candidate, int64_t target) {
    const double missing = static_cast<double>(target - candidate.tokens);
    const double words_per_token =
        static_cast<double>(candidate.words) / static_cast<double>(std::max<int64_t>(1, candidate.tokens));
    const auto step = static_cast<int64_t>(std::llround(missing * words_per_token));
    if (step != 0) return step;
    return missing > 0 ? 1 : -1;
}

}  // namespace

Result<CalibratedPrompt> calibrate_prompt(const TokenCounter& count_tokens, uint64_t seed, uint64_t index,
                                          int64_t target_tokens, int64_t first_guess_words) {
    std::optional<CalibratedPrompt> best;
    std::set<int64_t> tried;
    int64_t words = std::max<int64_t>(1, first_guess_words);
    for (int round = 0; round < kMaxRounds && tried.insert(words).second; ++round) {
        CalibratedPrompt candidate{synthetic_prompt(seed, index, words), words, 0};
        auto tokens = count_tokens(candidate.text);
        if (!tokens) return tokens.error();
        candidate.tokens = *tokens;
        if (!best || closer(candidate, *best, target_tokens)) best = candidate;
        if (candidate.tokens == target_tokens) break;
        words = std::max<int64_t>(1, words + word_step(candidate, target_tokens));
    }
    return *best;
}

}  // namespace tempered::loadgen
