// context_key names a context's language: equal for the same sub-grammar met in two grammars (so their
// classifications are shared), different where the language differs.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "grammar/context_key.h"
#include "grammar/matcher.h"
#include "grammar_test_support.h"

namespace tempered::grammar {
namespace {
namespace grammar_context_key_test {

using testing::schema_grammar;

// The keys of every leaf context (top `depth` frames) after `prefix`, leaving out the leaf that closes a
// string (its context runs into what follows the string, which differs between grammars).
std::set<std::string> leaf_keys(const Grammar& grammar, std::string_view prefix, size_t depth) {
    Matcher matcher(grammar);
    EXPECT_TRUE(matcher.accept_bytes(prefix)) << prefix;
    std::set<std::string> keys;
    std::vector<uint32_t> context;
    for (size_t i = 0; i < matcher.leaf_count(); ++i) {
        matcher.leaf_context(i, depth, context);
        if (grammar.byte_sets[grammar.elements[context[0]].index].contains('"')) continue;
        auto key = context_key(grammar, context, 1 << 16);
        EXPECT_TRUE(key);
        if (key) keys.insert(*key);
    }
    return keys;
}

TEST(GrammarContextKey, StringBodiesOfTwoGrammarsShareKeys) {
    Grammar plain = schema_grammar(R"({"type": "string"})");
    Grammar object = schema_grammar(R"({"type": "object", "properties": {"a": {"type": "integer"},
        "b": {"type": "string"}}, "required": ["a", "b"]})");
    // Inside a string, the two innermost frames (a character, the loop over characters) read the same.
    const auto plain_keys = leaf_keys(plain, "\"x", 2);
    EXPECT_GE(plain_keys.size(), 3u);  // plain ASCII, escapes, UTF-8 leads
    EXPECT_TRUE(plain_keys == leaf_keys(object, R"({"a": 1, "b": "x)", 2));
    // With the frames after the closing quote they differ: one sentence ends there, the other goes on.
    EXPECT_TRUE(leaf_keys(plain, "\"x", 4) != leaf_keys(object, R"({"a": 1, "b": "x)", 4));
}

TEST(GrammarContextKey, DifferentLanguagesHaveDifferentKeys) {
    Grammar bounded = schema_grammar(R"({"type": "string", "maxLength": 5})");
    Grammar plain = schema_grammar(R"({"type": "string"})");
    EXPECT_TRUE(leaf_keys(bounded, "\"x", 2) != leaf_keys(plain, "\"x", 2));
    Grammar digits = schema_grammar(R"({"type": "string", "pattern": "^[0-9]+$"})");
    Grammar letters = schema_grammar(R"({"type": "string", "pattern": "^[a-z]+$"})");
    EXPECT_TRUE(leaf_keys(digits, "\"", 4) != leaf_keys(letters, "\"", 4));
}

TEST(GrammarContextKey, OversizedGrammarsHaveNoKey) {
    Grammar grammar = schema_grammar(R"({"type": "string"})");
    Matcher matcher(grammar);
    ASSERT_TRUE(matcher.accept_bytes("\"x"));
    std::vector<uint32_t> context;
    matcher.leaf_context(0, 4, context);
    EXPECT_FALSE(context_key(grammar, context, 16));
    EXPECT_TRUE(context_key(grammar, context, 1 << 16));
}

}  // namespace grammar_context_key_test
}  // namespace
}  // namespace tempered::grammar
