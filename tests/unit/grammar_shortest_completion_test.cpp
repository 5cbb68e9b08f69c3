// CompletionLengths (grammar/shortest_completion.h): the fewest bytes to a complete sentence from the start, from
// each prefix a matcher has read, over alternatives and recursion; the completion it spells is accepted by the
// matcher and completes the sentence in exactly that many bytes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/shortest_completion.h"

namespace tempered::grammar {
namespace {
namespace grammar_shortest_completion_test {

Grammar gbnf(const char* text) {
    auto grammar = read_gbnf(text);
    EXPECT_TRUE(grammar.ok()) << (grammar.ok() ? "" : grammar.error().message);
    return std::move(grammar).value();
}

// After `prefix`, the completion closes the sentence in exactly `distance` bytes.
void expect_closes(const Grammar& grammar, const CompletionLengths& lengths, const std::string& prefix,
                   uint32_t distance) {
    Matcher matcher(grammar);
    ASSERT_TRUE(matcher.accept_bytes(prefix)) << prefix;
    EXPECT_EQ(lengths.distance(matcher), distance) << prefix;
    const std::optional<std::string> completion = lengths.completion(matcher);
    ASSERT_TRUE(completion) << prefix;
    EXPECT_EQ(completion->size(), distance) << prefix << " + " << *completion;
    ASSERT_TRUE(matcher.accept_bytes(*completion)) << prefix << " + " << *completion;
    EXPECT_TRUE(matcher.is_complete()) << prefix << " + " << *completion;
}

TEST(ShortestCompletion, TheShortestAlternativeAndItsRest) {
    const Grammar grammar = gbnf(R"g(root ::= "(" item ("," item)* ")"
item ::= "abc" | "x" | "(" item ")")g");
    const CompletionLengths lengths(grammar);
    EXPECT_EQ(lengths.shortest_sentence(), std::optional<std::string>("(x)"));
    expect_closes(grammar, lengths, "", 3);
    expect_closes(grammar, lengths, "(", 2);
    expect_closes(grammar, lengths, "(a", 3);    // "bc)"
    expect_closes(grammar, lengths, "((((", 5);  // "x))))"
    expect_closes(grammar, lengths, "(x,", 2);
    expect_closes(grammar, lengths, "(x)", 0);
}

TEST(ShortestCompletion, ARecursiveJsonSchemaClosesFromEveryPrefix) {
    const auto schema = nlohmann::ordered_json::parse(R"({"type": "object", "properties": {
        "name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#"}}},
        "required": ["name", "children"], "additionalProperties": false})");
    auto compiled = compile_json_schema(schema);
    ASSERT_TRUE(compiled.ok());
    const Grammar& grammar = *compiled;
    const CompletionLengths lengths(grammar);
    const std::optional<std::string> shortest = lengths.shortest_sentence();
    ASSERT_TRUE(shortest);
    EXPECT_TRUE(nlohmann::json::accept(*shortest)) << *shortest;
    // Every prefix of a deep answer (cut anywhere, inside strings too) closes into parsing JSON.
    const std::string answer =
        R"({"name": "Alice", "children": [{"name": "Bob", "children": [{"name": "Carol \"C\"", "children": []}]}]})";
    for (size_t cut = 0; cut <= answer.size(); ++cut) {
        Matcher prefix(grammar);
        ASSERT_TRUE(prefix.accept_bytes(answer.substr(0, cut))) << cut;
        const std::optional<std::string> completion = lengths.completion(prefix);
        ASSERT_TRUE(completion) << cut;
        EXPECT_EQ(completion->size(), lengths.distance(prefix)) << cut;
        const std::string closed = answer.substr(0, cut) + *completion;
        EXPECT_TRUE(nlohmann::json::accept(closed)) << closed;
        ASSERT_TRUE(prefix.accept_bytes(*completion)) << closed;
        EXPECT_TRUE(prefix.is_complete()) << closed;
    }
}

TEST(ShortestCompletion, ALongChainOfRulesInAnyOrder) {
    // A client's GBNF may chain many rules; each is summed once per rule it names, whatever the order.
    std::string text = "root ::= r0\n";
    constexpr int kRules = 3000;
    for (int i = 0; i < kRules; ++i)
        text += "r" + std::to_string(i) + " ::= \"a\" r" + std::to_string(i + 1) + " | \"bb\" r" +
                std::to_string(i + 1) + "\n";
    text += "r" + std::to_string(kRules) + " ::= \"z\"\n";
    const Grammar grammar = gbnf(text.c_str());
    const CompletionLengths lengths(grammar);
    EXPECT_EQ(lengths.shortest_sentence(), std::string(kRules, 'a') + "z");
}

TEST(ShortestCompletion, NoFiniteSentenceIsSaid) {
    const Grammar grammar = gbnf(R"g(root ::= "a" root)g");
    const CompletionLengths lengths(grammar);
    EXPECT_FALSE(lengths.shortest_sentence());
    Matcher matcher(grammar);
    EXPECT_EQ(lengths.distance(matcher), CompletionLengths::kNever);
    EXPECT_FALSE(lengths.completion(matcher));
}

}  // namespace grammar_shortest_completion_test
}  // namespace
}  // namespace tempered::grammar
