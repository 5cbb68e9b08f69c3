// Prompt-lookup drafting (speculative/ngram_drafter.h): the tokens after the most recent earlier occurrence
// of the longest suffix, held against a brute-force search on random sequences.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "speculative/ngram_drafter.h"

namespace tempered {
namespace {
namespace speculative_ngram_drafter_test {

// The definition, searched naively: for n from max_n down to min_n, the latest start p < L - n with
// tokens[p, p + n) == tokens[L - n, L), then up to max_drafts tokens from p + n (never past L).
std::vector<int32_t> brute_force(const std::vector<int32_t>& tokens, const NgramOptions& options) {
    const size_t length = tokens.size();
    for (int n = options.max_n; n >= options.min_n; --n) {
        if (length < static_cast<size_t>(n) + 1) continue;
        for (size_t start = length - static_cast<size_t>(n); start-- > 0;) {
            if (!std::equal(tokens.begin() + static_cast<std::ptrdiff_t>(start),
                            tokens.begin() + static_cast<std::ptrdiff_t>(start) + n, tokens.end() - n))
                continue;
            const size_t first = start + static_cast<size_t>(n);
            const size_t count = std::min(static_cast<size_t>(options.max_drafts), length - first);
            return {tokens.begin() + static_cast<std::ptrdiff_t>(first),
                    tokens.begin() + static_cast<std::ptrdiff_t>(first + count)};
        }
    }
    return {};
}

TEST(NgramDrafter, ProposesWhatFollowedTheSuffixBefore) {
    // "the cat sat on the mat . the cat" -> "sat on the mat"
    NgramDrafter drafter({.min_n = 2, .max_n = 4, .max_drafts = 4});
    drafter.append(std::vector<int32_t>{1, 2, 3, 4, 1, 5, 6, 1, 2});
    EXPECT_EQ(drafter.propose(), (std::vector<int32_t>{3, 4, 1, 5}));
    drafter.append(3);  // accepted: "the cat sat" now matches 3 tokens
    EXPECT_EQ(drafter.propose(), (std::vector<int32_t>{4, 1, 5, 6}));
}

TEST(NgramDrafter, NothingWithoutAnEarlierOccurrence) {
    NgramDrafter drafter;
    drafter.append(std::vector<int32_t>{1, 2, 3, 4, 5, 6});
    EXPECT_TRUE(drafter.propose().empty());
    NgramDrafter empty;
    EXPECT_TRUE(empty.propose().empty());
}

TEST(NgramDrafter, TheLongestSuffixWinsOverAMoreRecentShortOne) {
    // 7 8 9 | 10 ... 8 9 | 11 ... 7 8 9: the 3-gram's continuation (10), not the later 2-gram's (11).
    NgramDrafter drafter({.min_n = 2, .max_n = 3, .max_drafts = 1});
    drafter.append(std::vector<int32_t>{7, 8, 9, 10, 0, 8, 9, 11, 0, 7, 8, 9});
    EXPECT_EQ(drafter.propose(), (std::vector<int32_t>{10}));
}

TEST(NgramDrafter, DraftsStopAtTheEndOfTheSequence) {
    NgramDrafter drafter({.min_n = 1, .max_n = 2, .max_drafts = 8});
    drafter.append(std::vector<int32_t>{5, 5, 5});
    EXPECT_EQ(drafter.propose(), (std::vector<int32_t>{5}));  // "5 5" last seen at [1, 3): one token after it
}

TEST(NgramDrafter, TruncateForgetsTheCut) {
    NgramDrafter drafter({.min_n = 2, .max_n = 2, .max_drafts = 2});
    drafter.append(std::vector<int32_t>{1, 2, 3, 1, 2});
    EXPECT_EQ(drafter.propose(), (std::vector<int32_t>{3, 1}));
    drafter.truncate(3);  // 1 2 3
    EXPECT_TRUE(drafter.propose().empty());
    EXPECT_EQ(drafter.size(), 3u);
}

TEST(NgramDrafter, EqualsTheBruteForceSearchOnRandomSequences) {
    std::mt19937 random(7);
    for (int round = 0; round < 200; ++round) {
        const int min_n = 1 + round % 3;
        const NgramOptions options{.min_n = min_n, .max_n = min_n + round % 4, .max_drafts = 1 + round % 6};
        NgramDrafter drafter(options);
        std::vector<int32_t> tokens;
        std::uniform_int_distribution<int32_t> token(0, 2 + round % 5);  // small vocabularies repeat often
        for (int step = 0; step < 120; ++step) {
            tokens.push_back(token(random));
            drafter.append(tokens.back());
            ASSERT_EQ(drafter.propose(), brute_force(tokens, options)) << "round " << round << " step " << step;
        }
    }
}

}  // namespace speculative_ngram_drafter_test
}  // namespace
}  // namespace tempered
