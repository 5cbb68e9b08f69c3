// Token masks equal a brute-force check of all 151,936 Qwen2.5 tokens at states sampled from random
// generations over every schema of the corpus (tests/fixtures/grammar/schemas.json). Each schema is
// walked with the fast MaskGenerator choosing the tokens (its classifications partly shared with the
// prewarmed store and with the schemas before it); at sampled steps the generator's mask, the plain
// trie walk and brute force are compared. TEMPERED_GRAMMAR_MASK_STATES sets how many states in all
// (default: two per schema, about 20 s on a busy machine); the >= 1k-state run is recorded in bench/results/.
// Fewer states than schemas walk an evenly spaced part of the corpus, one state each: the ASan run in
// scripts/test.sh (86 s there for the default) takes a dozen, enough to keep the code under the sanitizers.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/position_masks.h"
#include "grammar/token_mask.h"
#include "grammar_vocabulary_support.h"

namespace tempered::grammar {
namespace {
namespace grammar_corpus_mask_test {

using testing::brute_force_mask;
using testing::qwen_vocabulary;
using testing::schema_corpus;

size_t wanted_states(size_t n_schemas) {
    const char* knob = std::getenv("TEMPERED_GRAMMAR_MASK_STATES");
    return knob && *knob ? std::strtoul(knob, nullptr, 10) : 2 * n_schemas;
}

// Compares all three masks at the matcher's state; returns false (with failures recorded) on a difference.
bool masks_agree(Matcher& matcher, MaskGenerator& generator, const TokenTrie& trie,
                 const std::vector<std::string>& vocabulary, const std::string& where) {
    TokenMask generated(vocabulary.size()), walked(vocabulary.size());
    generator.fill_mask(matcher, generated);
    trie.fill_mask(matcher, walked);
    const TokenMask expected = brute_force_mask(matcher, vocabulary);
    size_t differences = 0;
    for (uint32_t id = 0; id < vocabulary.size() && differences < 5; ++id) {
        if (generated.allows(id) != expected.allows(id) || walked.allows(id) != expected.allows(id)) {
            ADD_FAILURE() << where << ": token " << id << " '" << vocabulary[id] << "' brute force "
                          << expected.allows(id) << ", generator " << generated.allows(id) << ", trie "
                          << walked.allows(id);
            ++differences;
        }
    }
    return differences == 0;
}

// Random generations of one schema until `states` states were compared (or the walks run out).
size_t compare_sampled_states(const std::string& name, const Grammar& grammar, const TokenTrie& trie,
                              const std::vector<std::string>& vocabulary, size_t states, uint32_t seed) {
    MaskGenerator generator(grammar, trie);
    TokenMask mask(vocabulary.size());
    std::mt19937 rng(seed);
    size_t compared = 0;
    for (int walk = 0; walk < 32 && compared < states; ++walk) {
        Matcher matcher(grammar);
        for (int step = 0; step < 48 && compared < states; ++step) {
            if (rng() % 6 == 0) {
                const std::string where = name + " walk " + std::to_string(walk) + " step " + std::to_string(step);
                if (!masks_agree(matcher, generator, trie, vocabulary, where)) return compared;
                ++compared;
            }
            generator.fill_mask(matcher, mask);
            std::vector<uint32_t> allowed;
            for (uint32_t id = 0; id < vocabulary.size(); ++id)
                if (mask.allows(id)) allowed.push_back(id);
            if (allowed.empty()) break;
            // Prefer short tokens half of the time so walks also close strings and objects.
            uint32_t pick = allowed[rng() % allowed.size()];
            for (int tries = 0; tries < 8 && rng() % 2 && vocabulary[pick].size() > 1; ++tries)
                pick = allowed[rng() % allowed.size()];
            EXPECT_TRUE(matcher.accept_bytes(vocabulary[pick])) << name;
        }
    }
    return compared;
}

TEST(GrammarCorpusMask, QwenVocabularyMatchesBruteForceAcrossTheCorpus) {
    REQUIRE_QWEN_MODEL();
    const std::vector<std::string> vocabulary = qwen_vocabulary();
    ASSERT_EQ(vocabulary.size(), 151936u);
    const TokenTrie trie(vocabulary);
    prewarm_json_contexts(trie);  // so the walks also read classifications shared across grammars
    const auto corpus = schema_corpus();
    ASSERT_GE(corpus.size(), 60u);
    const size_t total = wanted_states(corpus.size());
    const size_t per_schema = (total + corpus.size() - 1) / corpus.size();
    const size_t schema_stride = total > 0 && total < corpus.size() ? corpus.size() / total : 1;
    size_t compared = 0;
    for (size_t i = 0; i < corpus.size() && !HasFailure(); i += schema_stride) {
        auto grammar = compile_json_schema(corpus[i].second);
        ASSERT_TRUE(grammar) << corpus[i].first << ": " << grammar.error().message;
        compared += compare_sampled_states(corpus[i].first, *grammar, trie, vocabulary, per_schema, 7919 * i + 1);
    }
    std::printf("compared %zu states over %zu schemas: generator, trie walk and brute force agree\n", compared,
                corpus.size());
    EXPECT_GE(compared, total * 9 / 10);
}

}  // namespace grammar_corpus_mask_test
}  // namespace
}  // namespace tempered::grammar
