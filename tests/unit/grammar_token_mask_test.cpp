// The token mask from the vocabulary trie equals a brute-force check of every token, on a toy vocabulary
// and on Qwen2.5's real one along random walks through several schemas. A disabled test prints mask
// times (run with --gtest_also_run_disabled_tests --gtest_filter='*MaskTime*'): measurement, not a gate.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/position_masks.h"
#include "grammar/token_mask.h"
#include "grammar_test_support.h"
#include "grammar_vocabulary_support.h"

namespace tempered::grammar {
namespace {
namespace grammar_token_mask_test {

using testing::brute_force_mask;
using testing::qwen_vocabulary;
using testing::schema_grammar;

// The trie walk, the per-position generator and brute force agree at every step of a seeded random walk
// that takes an allowed token each step. Returns the number of states compared.
int compare_along_random_walk(const Grammar& grammar, const TokenTrie& trie, const std::vector<std::string>& vocabulary,
                              int steps, uint32_t seed) {
    Matcher matcher(grammar);
    MaskGenerator generator(grammar, trie);
    TokenMask mask(vocabulary.size()), generated(vocabulary.size());
    std::mt19937 rng(seed);
    int compared = 0;
    for (int step = 0; step < steps; ++step) {
        trie.fill_mask(matcher, mask);
        generator.fill_mask(matcher, generated);
        TokenMask expected = brute_force_mask(matcher, vocabulary);
        ++compared;
        std::vector<uint32_t> allowed;
        for (uint32_t id = 0; id < vocabulary.size(); ++id) {
            EXPECT_EQ(mask.allows(id), expected.allows(id))
                << "step " << step << " token " << id << " '" << vocabulary[id] << "'";
            EXPECT_EQ(generated.allows(id), expected.allows(id))
                << "generator, step " << step << " token " << id << " '" << vocabulary[id] << "'";
            if (mask.allows(id)) allowed.push_back(id);
        }
        if (::testing::Test::HasFailure() || allowed.empty()) break;
        // Prefer short tokens half of the time so walks also close strings and objects.
        uint32_t pick = allowed[rng() % allowed.size()];
        if (rng() % 2) {
            for (int tries = 0; tries < 8 && vocabulary[pick].size() > 1; ++tries)
                pick = allowed[rng() % allowed.size()];
        }
        EXPECT_TRUE(matcher.accept_bytes(vocabulary[pick]));
    }
    return compared;
}

TEST(GrammarTokenMask, ToyVocabularyMatchesBruteForce) {
    const std::vector<std::string> vocabulary = {"{", "{\"", "\"",  "\":",  "\": ", "a",       "ab", "abc",
                                                 "",  "}",   "\"}", "1",    "12",   "ab",      " ",  ", ",
                                                 ",", "\"a", "x\"", "\xC3", "\xA9", "\xC3\xA9"};
    const TokenTrie trie(vocabulary);
    Grammar grammar = schema_grammar(R"({"type": "object", "properties": {"ab": {"type": "integer"},
        "a": {"type": "string"}}, "required": ["ab"]})");
    for (uint32_t seed = 0; seed < 20; ++seed) compare_along_random_walk(grammar, trie, vocabulary, 12, seed);
}

TEST(GrammarTokenMask, MaskLeavesTheMatcherWhereItWas) {
    const std::vector<std::string> vocabulary = {"tr", "true", "t", "f", "false", "x"};
    const TokenTrie trie(vocabulary);
    Grammar grammar = schema_grammar(R"({"type": "boolean"})");
    Matcher matcher(grammar);
    ASSERT_TRUE(matcher.accept_byte('t'));
    TokenMask mask(vocabulary.size());
    trie.fill_mask(matcher, mask);
    EXPECT_EQ(mask.count(), 0u);  // after "t" only "rue" fits, and no token starts with "r"
    ASSERT_TRUE(matcher.accept_bytes("rue"));
    EXPECT_TRUE(matcher.is_complete());
}

const std::vector<const char*> kWalkSchemas = {
    R"({"type": "object", "properties": {"city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 14}}, "required": ["city", "unit"]})",
    R"({"type": "array", "items": {"type": "object", "properties": {"id": {"type": "string", "format": "uuid"},
        "score": {"type": "number"}, "tags": {"type": "array", "items": {"type": "string", "maxLength": 8}}},
        "required": ["id", "score"]}, "minItems": 1})",
    R"({"$defs": {"node": {"type": "object", "properties": {"name": {"type": "string", "pattern": "^[a-z_]+$"},
        "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["name"]}}, "$ref": "#/$defs/node"})",
    R"({"type": "object"})",
    R"({"anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}, {"type": "boolean"}]})",
};

TEST(GrammarTokenMask, QwenVocabularyMatchesBruteForceOnRandomWalks) {
    REQUIRE_QWEN_MODEL();
    const std::vector<std::string> vocabulary = qwen_vocabulary();
    ASSERT_EQ(vocabulary.size(), 151936u);
    const TokenTrie trie(vocabulary);
    int states = 0;
    for (size_t i = 0; i < kWalkSchemas.size(); ++i) {
        Grammar grammar = schema_grammar(kWalkSchemas[i]);
        for (uint32_t seed = 0; seed < 2; ++seed)
            states += compare_along_random_walk(grammar, trie, vocabulary, 12, seed + 7 * i);
    }
    EXPECT_GE(states, 60);
}

// The issue's bar (>= 1k states), too slow for every run: about 0.1 s per state (brute force and the
// plain trie walk), 105 s in all on the shared 2-core machine.
TEST(GrammarTokenMask, DISABLED_QwenVocabularyMatchesBruteForceOnThousandStates) {
    REQUIRE_QWEN_MODEL();
    const std::vector<std::string> vocabulary = qwen_vocabulary();
    const TokenTrie trie(vocabulary);
    int states = 0;
    for (uint32_t seed = 0; states < 1000 && seed < 200; ++seed) {
        Grammar grammar = schema_grammar(kWalkSchemas[seed % kWalkSchemas.size()]);
        states += compare_along_random_walk(grammar, trie, vocabulary, 40, 1000 + seed);
        if (HasFailure()) break;
    }
    std::printf("compared %d states\n", states);
    EXPECT_GE(states, 1000);
}

TEST(GrammarTokenMask, DISABLED_MaskTimeOnQwenVocabulary) {
    REQUIRE_QWEN_MODEL();
    const std::vector<std::string> vocabulary = qwen_vocabulary();
    const TokenTrie trie(vocabulary);
    std::printf("trie: %zu tokens, %zu nodes\n", trie.n_tokens(), trie.n_nodes());
    std::vector<double> all_micros;
    for (size_t i = 0; i < kWalkSchemas.size(); ++i) {
        Grammar grammar = schema_grammar(kWalkSchemas[i]);
        MaskGenerator generator(grammar, trie);
        std::vector<double> micros, cold_micros;
        for (uint32_t seed = 0; seed < 4; ++seed) {
            Matcher matcher(grammar);
            TokenMask mask(vocabulary.size());
            std::mt19937 rng(seed);
            for (int step = 0; step < 50; ++step) {
                const auto cold_start = std::chrono::steady_clock::now();
                generator.fill_mask(matcher, mask);  // may classify contexts seen for the first time
                cold_micros.push_back(
                    std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - cold_start).count());
                const auto start = std::chrono::steady_clock::now();
                generator.fill_mask(matcher, mask);
                micros.push_back(
                    std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
                std::vector<uint32_t> allowed;
                for (uint32_t id = 0; id < vocabulary.size(); ++id)
                    if (mask.allows(id)) allowed.push_back(id);
                if (allowed.empty()) break;
                uint32_t pick = allowed[rng() % allowed.size()];
                for (int tries = 0; tries < 8 && rng() % 2 && vocabulary[pick].size() > 1; ++tries)
                    pick = allowed[rng() % allowed.size()];
                ASSERT_TRUE(matcher.accept_bytes(vocabulary[pick]));
            }
        }
        std::sort(micros.begin(), micros.end());
        std::printf("schema %zu: %zu states, p50 %.1f us, p99 %.1f us, max %.1f us (%zu contexts classified)\n", i,
                    micros.size(), micros[micros.size() / 2], micros[micros.size() * 99 / 100], micros.back(),
                    generator.classified_contexts());
        std::sort(cold_micros.begin(), cold_micros.end());
        std::printf(
            "    first call per state (includes classifying new contexts): p50 %.1f us, p99 %.1f us, max %.1f us\n",
            cold_micros[cold_micros.size() / 2], cold_micros[cold_micros.size() * 99 / 100], cold_micros.back());
        all_micros.insert(all_micros.end(), micros.begin(), micros.end());
    }
    std::sort(all_micros.begin(), all_micros.end());
    std::printf("all: %zu states, p50 %.1f us, p99 %.1f us\n", all_micros.size(), all_micros[all_micros.size() / 2],
                all_micros[all_micros.size() * 99 / 100]);
}

}  // namespace grammar_token_mask_test
}  // namespace
}  // namespace tempered::grammar
