// Drafts under a grammar (speculative/grammar_drafts.h): cut before the first draft the grammar refuses from
// the sequence's state, which itself does not move. Over the byte tokenizer, a JSON schema's string of at
// most 5 characters: after `{"name": "ab`, "c", "d", "e" may come, then only the closing quote.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine_test_support.h"
#include "grammar/json_schema.h"
#include "server/structured_output.h"
#include "speculative/grammar_drafts.h"

namespace tempered {
namespace {
namespace speculative_grammar_drafts_test {

std::vector<int32_t> bytes(const std::string& text) { return {text.begin(), text.end()}; }

grammar::ConstraintState state_after(const std::string& text) {
    const Tokenizer tokenizer = testing::byte_tokenizer();
    auto grammar = grammar::compile_json_schema(nlohmann::ordered_json::parse(
        R"({"type":"object","properties":{"name":{"type":"string","maxLength":5}},"required":["name"]})"));
    EXPECT_TRUE(grammar);
    auto vocabulary =
        std::make_shared<const grammar::GrammarVocabulary>(grammar_vocabulary(tokenizer, tokenizer.vocab_size()));
    grammar::ConstraintState state(std::make_shared<const grammar::Constraint>(std::move(grammar).value(), vocabulary));
    for (int32_t token : bytes(text)) EXPECT_TRUE(state.accept(token)) << static_cast<char>(token);
    return state;
}

TEST(GrammarDrafts, CutBeforeTheFirstDraftTheGrammarRefuses) {
    const grammar::ConstraintState state = state_after(R"({"name": "ab)");
    EXPECT_EQ(drafts_the_grammar_allows(state, bytes("cdefg")), 3u);  // "abcde" is 5 characters
    EXPECT_EQ(drafts_the_grammar_allows(state, bytes(R"(cd"})")), 4u);
    EXPECT_EQ(drafts_the_grammar_allows(state, bytes("\ncd")), 0u);  // a raw newline in a JSON string
    EXPECT_EQ(drafts_the_grammar_allows(state, {}), 0u);
}

TEST(GrammarDrafts, TheSequencesStateDoesNotMove) {
    const grammar::ConstraintState state = state_after(R"({"name": "abc)");
    const uint32_t distance = state.distance();
    EXPECT_EQ(drafts_the_grammar_allows(state, bytes(R"(de"})")), 4u);
    EXPECT_EQ(state.distance(), distance);
    EXPECT_EQ(drafts_the_grammar_allows(state, bytes(R"(de"})")), 4u);
}

}  // namespace speculative_grammar_drafts_test
}  // namespace
}  // namespace tempered
