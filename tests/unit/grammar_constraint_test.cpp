// Constraint / ConstraintState: the mask a sequence gets each step, against a brute-force check of every
// token; end of generation exactly when the sentence is complete; lazy start at a trigger token.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/constraint.h"
#include "grammar/json_schema.h"
#include "grammar_test_support.h"

namespace tempered::grammar {
namespace {
namespace grammar_constraint_test {

// Printable ASCII one byte each (ids 0..94), some multi-byte tokens, a token that ends generation, a
// control token without bytes, and a trigger.
struct TestVocabulary {
    std::vector<std::string> bytes;
    int32_t end = 0, control = 0, trigger = 0;

    TestVocabulary() {
        for (int c = 32; c < 127; ++c) bytes.emplace_back(1, static_cast<char>(c));
        for (const char* piece : {"{\"", "\": ", ", \"", "true", "false", "\"}", "ab", "\"x\""})
            bytes.emplace_back(piece);
        end = add("");
        control = add("");
        trigger = add("<tool_call>");
    }
    int32_t add(std::string piece) {
        bytes.push_back(std::move(piece));
        return static_cast<int32_t>(bytes.size() - 1);
    }
    std::shared_ptr<const GrammarVocabulary> shared() const {
        return std::make_shared<const GrammarVocabulary>(bytes, std::vector<int32_t>{end});
    }
};

// The schema's canonical sentences are {"a": true|false, "b": "x"|"y"}.
constexpr const char* kSchema = R"({"type":"object","properties":{"a":{"type":"boolean"},
    "b":{"enum":["x","y"]}},"required":["a","b"]})";

std::shared_ptr<const Constraint> schema_constraint(const TestVocabulary& vocabulary) {
    return std::make_shared<const Constraint>(testing::schema_grammar(kSchema), vocabulary.shared());
}

// Brute force: does the grammar, after `prefix`, accept `token`'s bytes (or may it end)?
bool brute_force_allows(const Grammar& grammar, const TestVocabulary& vocabulary, const std::string& prefix,
                        int32_t token) {
    Matcher matcher(grammar);
    EXPECT_TRUE(matcher.accept_bytes(prefix));
    if (token == vocabulary.end) return matcher.is_complete();
    const std::string& bytes = vocabulary.bytes[static_cast<size_t>(token)];
    return !bytes.empty() && matcher.accept_bytes(bytes);
}

TEST(Constraint, EachStepsMaskEqualsABruteForceCheckOfEveryToken) {
    const TestVocabulary vocabulary;
    const auto constraint = schema_constraint(vocabulary);
    ConstraintState state(constraint);
    TokenMask mask(vocabulary.bytes.size());
    const std::string sentence = R"({"a": true, "b": "y"})";
    std::string prefix;
    for (size_t i = 0; i <= sentence.size(); ++i) {
        ASSERT_TRUE(state.fill_mask(mask));
        for (int32_t token = 0; token < static_cast<int32_t>(vocabulary.bytes.size()); ++token) {
            const bool expected = brute_force_allows(constraint->grammar(), vocabulary, prefix, token);
            ASSERT_EQ(mask.allows(static_cast<uint32_t>(token)), expected)
                << "after '" << prefix << "' token " << token;
            ASSERT_EQ(state.allows(token), expected) << "after '" << prefix << "' token " << token;
        }
        if (i == sentence.size()) break;
        ASSERT_TRUE(state.accept(static_cast<int32_t>(sentence[i] - 32)));  // the one-byte token
        prefix += sentence[i];
    }
    EXPECT_TRUE(mask.allows(static_cast<uint32_t>(vocabulary.end)));  // complete: end is allowed
    EXPECT_TRUE(state.must_end());
}

TEST(Constraint, EndOfGenerationIsMaskedUntilTheSentenceIsComplete) {
    const TestVocabulary vocabulary;
    ConstraintState state(schema_constraint(vocabulary));
    TokenMask mask(vocabulary.bytes.size());
    for (const char* piece : {"{\"", "a", "\": ", "false", ", \"", "b", "\": ", "\"x\""}) {
        ASSERT_TRUE(state.fill_mask(mask));
        EXPECT_FALSE(mask.allows(static_cast<uint32_t>(vocabulary.end))) << piece;
        EXPECT_FALSE(state.accept(vocabulary.end));
        EXPECT_FALSE(state.must_end());
        int32_t token = -1;
        for (size_t t = 0; t < vocabulary.bytes.size(); ++t)
            if (vocabulary.bytes[t] == piece) token = static_cast<int32_t>(t);
        ASSERT_TRUE(state.accept(token)) << piece;
    }
    ASSERT_TRUE(state.accept(static_cast<int32_t>('}' - 32)));
    ASSERT_TRUE(state.fill_mask(mask));
    EXPECT_EQ(mask.count(), 1u);  // only the end
    EXPECT_TRUE(mask.allows(static_cast<uint32_t>(vocabulary.end)));
    EXPECT_TRUE(state.must_end());
    EXPECT_TRUE(state.accept(vocabulary.end));
}

TEST(Constraint, ARefusedTokenLeavesTheStateAsItWas) {
    const TestVocabulary vocabulary;
    ConstraintState state(schema_constraint(vocabulary));
    EXPECT_FALSE(state.accept(static_cast<int32_t>('x' - 32)));                 // an object starts with '{'
    EXPECT_FALSE(state.accept(vocabulary.control));                             // no bytes: never part of a sentence
    EXPECT_FALSE(state.accept(static_cast<int32_t>(vocabulary.bytes.size())));  // outside the vocabulary
    EXPECT_TRUE(state.accept(static_cast<int32_t>('{' - 32)));
    EXPECT_FALSE(state.accept(static_cast<int32_t>('{' - 32)));
    EXPECT_TRUE(state.accept(static_cast<int32_t>('"' - 32)));
}

TEST(Constraint, RandomWalksOverTheMaskAlwaysEndInAValidInstance) {
    const TestVocabulary vocabulary;
    const auto constraint = schema_constraint(vocabulary);
    TokenMask mask(vocabulary.bytes.size());
    for (uint64_t seed = 0; seed < 200; ++seed) {
        std::mt19937_64 generator(seed);
        ConstraintState state(constraint);
        std::string text;
        while (!state.must_end()) {
            ASSERT_TRUE(state.fill_mask(mask)) << text;
            std::vector<int32_t> allowed;
            for (int32_t t = 0; t < static_cast<int32_t>(mask.size()); ++t)
                if (mask.allows(static_cast<uint32_t>(t))) allowed.push_back(t);
            const int32_t token = allowed[generator() % allowed.size()];
            ASSERT_TRUE(state.accept(token)) << text << " + " << token;  // the mask's tokens are accepted
            text += vocabulary.bytes[static_cast<size_t>(token)];
            ASSERT_LT(text.size(), 100u);
        }
        const auto value = nlohmann::json::parse(text);
        ASSERT_TRUE(value["a"].is_boolean()) << text;
        ASSERT_TRUE(value["b"] == "x" || value["b"] == "y") << text;
    }
}

// <tool_call>("a" | "b")} : a grammar that begins with its trigger's text.
Grammar tool_call_grammar() {
    GrammarBuilder builder;
    const RuleId root = builder.add_rule();
    builder.define(root, Expr::sequence({Expr::literal("<tool_call>"),
                                         Expr::choice({Expr::literal("a"), Expr::literal("b")}), Expr::literal("}")}));
    auto grammar = builder.build(root);
    EXPECT_TRUE(grammar);
    return std::move(grammar).value();
}

TEST(Constraint, ALazyGrammarStartsAtItsTriggerWithTheTriggersTextFed) {
    const TestVocabulary vocabulary;
    const auto constraint = std::make_shared<const Constraint>(tool_call_grammar(), vocabulary.shared(),
                                                               std::vector<int32_t>{vocabulary.trigger});
    ConstraintState state(constraint);
    EXPECT_FALSE(state.active());
    EXPECT_TRUE(state.allows(static_cast<int32_t>('q' - 32)));
    EXPECT_TRUE(state.accept(static_cast<int32_t>('q' - 32)));  // free text
    EXPECT_TRUE(state.accept(vocabulary.end));                  // free: the end is allowed
    EXPECT_TRUE(state.accept(vocabulary.trigger));
    ASSERT_TRUE(state.active());
    TokenMask mask(vocabulary.bytes.size());
    ASSERT_TRUE(state.fill_mask(mask));
    EXPECT_EQ(mask.count(), 2u);
    EXPECT_TRUE(mask.allows(static_cast<uint32_t>('a' - 32)));
    EXPECT_TRUE(mask.allows(static_cast<uint32_t>('b' - 32)));
    EXPECT_TRUE(state.accept(static_cast<int32_t>('b' - 32)));
    EXPECT_FALSE(state.must_end());
    EXPECT_TRUE(state.accept(static_cast<int32_t>('}' - 32)));
    EXPECT_TRUE(state.must_end());  // EndGeneration
}

TEST(Constraint, AfterCompleteFreeTextReturnsToFreeOutputUntilTheNextTrigger) {
    const TestVocabulary vocabulary;
    const auto constraint = std::make_shared<const Constraint>(
        tool_call_grammar(), vocabulary.shared(), std::vector<int32_t>{vocabulary.trigger}, AfterComplete::FreeText);
    ConstraintState state(constraint);
    for (int call = 0; call < 2; ++call) {
        ASSERT_TRUE(state.accept(vocabulary.trigger));
        EXPECT_FALSE(state.accept(static_cast<int32_t>('q' - 32)));
        ASSERT_TRUE(state.accept(static_cast<int32_t>('a' - 32)));
        ASSERT_TRUE(state.accept(static_cast<int32_t>('}' - 32)));
        EXPECT_FALSE(state.must_end());
        EXPECT_FALSE(state.active());
        EXPECT_TRUE(state.accept(static_cast<int32_t>('q' - 32)));
    }
}

TEST(Constraint, ATriggerTheGrammarDoesNotBeginWithIsRefusedAndTheOutputStaysFree) {
    const TestVocabulary vocabulary;
    const auto constraint = std::make_shared<const Constraint>(testing::schema_grammar(kSchema), vocabulary.shared(),
                                                               std::vector<int32_t>{vocabulary.trigger});
    ConstraintState state(constraint);
    EXPECT_FALSE(state.accept(vocabulary.trigger));
    EXPECT_FALSE(state.active());
    EXPECT_TRUE(state.accept(static_cast<int32_t>('q' - 32)));
}

TEST(Constraint, ChoicesSharingOneConstraintKeepTheirOwnState) {
    const TestVocabulary vocabulary;
    const auto constraint = schema_constraint(vocabulary);
    ConstraintState first(constraint), second(constraint);
    ASSERT_TRUE(first.accept(static_cast<int32_t>('{' - 32)));
    EXPECT_FALSE(second.allows(static_cast<int32_t>('"' - 32)));
    EXPECT_TRUE(first.allows(static_cast<int32_t>('"' - 32)));
    ConstraintState copy = first;  // n > 1 forks copy a state
    ASSERT_TRUE(copy.accept(static_cast<int32_t>('"' - 32)));
    EXPECT_TRUE(first.allows(static_cast<int32_t>('"' - 32)));
}

}  // namespace grammar_constraint_test
}  // namespace
}  // namespace tempered::grammar
