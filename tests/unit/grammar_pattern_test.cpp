// `pattern` (regex subset) -> grammar over the JSON-encoded string body: anchors, classes, shorthands,
// groups, alternation, quantifiers, escaping of quote and backslash, and the unsupported constructs.
#include <gtest/gtest.h>

#include <string>

#include "grammar/regex.h"
#include "grammar_test_support.h"

namespace tempered::grammar {
namespace {
namespace grammar_pattern_test {

using testing::matches;

// The pattern compiled as a whole grammar over the string's body (what sits between the quotes).
Grammar pattern_grammar(std::string_view pattern) {
    auto body = compile_pattern(pattern);
    EXPECT_TRUE(body) << pattern << ": " << (body ? "" : body.error().message);
    GrammarBuilder builder;
    RuleId root = builder.add_rule();
    builder.define(root, body ? std::move(body.value()) : Expr::empty());
    return std::move(builder.build(root).value());
}

TEST(GrammarPattern, AnchorsDecideWhetherTheMatchMaySearch) {
    Grammar both = pattern_grammar("^abc$");
    EXPECT_TRUE(matches(both, "abc"));
    EXPECT_FALSE(matches(both, "xabc"));
    EXPECT_FALSE(matches(both, "abcx"));
    Grammar start = pattern_grammar("^abc");
    EXPECT_TRUE(matches(start, "abcxyz"));
    EXPECT_FALSE(matches(start, "xabc"));
    Grammar end = pattern_grammar("abc$");
    EXPECT_TRUE(matches(end, "xyzabc"));
    EXPECT_FALSE(matches(end, "abcx"));
    Grammar neither = pattern_grammar("abc");
    EXPECT_TRUE(matches(neither, "--abc--"));
    EXPECT_FALSE(matches(neither, "ab-c"));
}

TEST(GrammarPattern, AnchorsBindPerTopLevelBranch) {
    Grammar grammar = pattern_grammar("^a|b$");
    EXPECT_TRUE(matches(grammar, "a..."));
    EXPECT_TRUE(matches(grammar, "...b"));
    EXPECT_FALSE(matches(grammar, "...a"));
}

TEST(GrammarPattern, ClassesRangesAndNegation) {
    Grammar hex = pattern_grammar("^[0-9a-fA-F]+$");
    EXPECT_TRUE(matches(hex, "09afAF"));
    EXPECT_FALSE(matches(hex, "0g"));
    Grammar not_digit = pattern_grammar("^[^0-9]$");
    EXPECT_TRUE(matches(not_digit, "x"));
    EXPECT_TRUE(matches(not_digit, "\xC3\xA9"));
    EXPECT_FALSE(matches(not_digit, "5"));
    Grammar dash = pattern_grammar("^[a-]$");
    EXPECT_TRUE(matches(dash, "-"));
    EXPECT_TRUE(matches(dash, "a"));
}

TEST(GrammarPattern, Shorthands) {
    Grammar grammar = pattern_grammar("^\\d\\w\\s$");
    EXPECT_TRUE(matches(grammar, "7_ "));
    EXPECT_TRUE(matches(grammar, "0a\\t"));  // a tab is written as \t inside a JSON string
    EXPECT_FALSE(matches(grammar, "a7 "));
    Grammar negated = pattern_grammar("^\\D\\W\\S$");
    EXPECT_TRUE(matches(negated, "a-b"));
    EXPECT_FALSE(matches(negated, "1-b"));
    EXPECT_FALSE(matches(negated, "a- "));
}

TEST(GrammarPattern, GroupsAlternationAndQuantifiers) {
    Grammar grammar = pattern_grammar("^(ab|c)+(?:x{2}|y{1,3}?)z?$");
    EXPECT_TRUE(matches(grammar, "abcabxx"));
    EXPECT_TRUE(matches(grammar, "cyyyz"));
    EXPECT_FALSE(matches(grammar, "xx"));
    EXPECT_FALSE(matches(grammar, "cyyyy"));
    Grammar at_least = pattern_grammar("^a{2,}$");
    EXPECT_FALSE(matches(at_least, "a"));
    EXPECT_TRUE(matches(at_least, "aaaaaa"));
    Grammar star = pattern_grammar("^b*$");
    EXPECT_TRUE(matches(star, ""));
    EXPECT_TRUE(matches(star, "bbb"));
}

TEST(GrammarPattern, QuoteAndBackslashAreWrittenEscaped) {
    Grammar grammar = pattern_grammar("^a\"b\\\\c\\.$");  // the regex ^a"b\\c\.$
    EXPECT_TRUE(matches(grammar, "a\\\"b\\\\c."));
    EXPECT_FALSE(matches(grammar, "a\"b\\c."));
    Grammar dot = pattern_grammar("^.$");
    EXPECT_TRUE(matches(dot, "\\\""));
    EXPECT_TRUE(matches(dot, "\\\\"));
    EXPECT_TRUE(matches(dot, "\xE2\x82\xAC"));
    EXPECT_FALSE(matches(dot, "\""));
    EXPECT_FALSE(matches(dot, "\\n"));  // `.` does not match a newline
}

TEST(GrammarPattern, NonAsciiLiterals) {
    Grammar grammar = pattern_grammar("^caf\xC3\xA9+$");
    EXPECT_TRUE(matches(grammar, "caf\xC3\xA9\xC3\xA9"));
    EXPECT_FALSE(matches(grammar, "cafe"));
}

TEST(GrammarPattern, UnsupportedConstructsAreErrors) {
    for (const char* pattern :
         {"(?=a)", "(?!a)", "a\\b", "\\1", "[\xC3\xA9]", "a{3,2}", "(a", "[ab", "a$b", "*a", "a{99999}"}) {
        EXPECT_FALSE(compile_pattern(pattern)) << pattern;
    }
}

}  // namespace grammar_pattern_test
}  // namespace
}  // namespace tempered::grammar
