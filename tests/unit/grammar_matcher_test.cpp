// The grammar IR and the byte matcher: repetition bounds, recursion, nullable loops, rollback.
#include <gtest/gtest.h>

#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar_test_support.h"

namespace tempered::grammar {
namespace {
namespace grammar_matcher_test {

using testing::matches;

Grammar build(Expr body) {
    GrammarBuilder builder;
    RuleId root = builder.add_rule();
    builder.define(root, std::move(body));
    auto grammar = builder.build(root);
    EXPECT_TRUE(grammar);
    return std::move(grammar.value());
}

TEST(GrammarMatcher, LiteralMatchesExactlyItself) {
    Grammar grammar = build(Expr::literal("null"));
    EXPECT_TRUE(matches(grammar, "null"));
    EXPECT_FALSE(matches(grammar, "nul"));
    EXPECT_FALSE(matches(grammar, "nulll"));
    EXPECT_FALSE(matches(grammar, "Null"));
}

TEST(GrammarMatcher, BoundedRepetitionCountsItems) {
    Grammar grammar = build(Expr::repeat(Expr::literal("ab"), 2, 4));
    EXPECT_FALSE(matches(grammar, "ab"));
    EXPECT_TRUE(matches(grammar, "abab"));
    EXPECT_TRUE(matches(grammar, "ababab"));
    EXPECT_TRUE(matches(grammar, "abababab"));
    EXPECT_FALSE(matches(grammar, "ababababab"));
    EXPECT_FALSE(matches(grammar, "aba"));
}

TEST(GrammarMatcher, UnboundedRepetitionKeepsStacksFlat) {
    Grammar grammar = build(Expr::repeat(Expr::byte_set(ByteSet::range('a', 'z')), 1, Expr::kUnbounded));
    Matcher matcher(grammar);
    EXPECT_FALSE(matcher.is_complete());
    std::string long_word(5000, 'q');
    ASSERT_TRUE(matcher.accept_bytes(long_word));
    EXPECT_TRUE(matcher.is_complete());
    EXPECT_FALSE(matcher.accept_byte('7'));
    EXPECT_TRUE(matcher.is_complete());
}

TEST(GrammarMatcher, RecursiveRuleMatchesNestedBrackets) {
    GrammarBuilder builder;
    RuleId nested = builder.add_rule();
    builder.define(nested,
                   Expr::choice({Expr::literal("x"),
                                 Expr::sequence({Expr::literal("["), Expr::reference(nested), Expr::literal("]")})}));
    Grammar grammar = std::move(builder.build(nested).value());
    EXPECT_TRUE(matches(grammar, "x"));
    EXPECT_TRUE(matches(grammar, "[[[x]]]"));
    EXPECT_FALSE(matches(grammar, "[[x]"));
    EXPECT_FALSE(matches(grammar, "[[x]]]"));
}

TEST(GrammarMatcher, RepetitionOfNullableItemTerminates) {
    // (a?)* loops through an empty item; the closure must notice instead of recursing forever.
    Grammar grammar = build(Expr::repeat(Expr::optional(Expr::literal("a")), 0, Expr::kUnbounded));
    EXPECT_TRUE(matches(grammar, ""));
    EXPECT_TRUE(matches(grammar, "aaaa"));
    EXPECT_FALSE(matches(grammar, "ab"));
}

TEST(GrammarMatcher, AmbiguousAlternativesBothTracked) {
    Grammar grammar = build(Expr::choice({Expr::literal("abc"), Expr::literal("abd"), Expr::literal("ab")}));
    EXPECT_TRUE(matches(grammar, "ab"));
    EXPECT_TRUE(matches(grammar, "abc"));
    EXPECT_TRUE(matches(grammar, "abd"));
    EXPECT_FALSE(matches(grammar, "abe"));
}

TEST(GrammarMatcher, RejectedByteLeavesStateUnchanged) {
    Grammar grammar = build(Expr::literal("abc"));
    Matcher matcher(grammar);
    ASSERT_TRUE(matcher.accept_byte('a'));
    EXPECT_FALSE(matcher.accept_byte('x'));
    EXPECT_TRUE(matcher.accept_byte('b'));
    EXPECT_FALSE(matcher.accept_bytes("cd"));  // all or nothing: 'c' is not kept
    EXPECT_TRUE(matcher.accept_byte('c'));
    EXPECT_TRUE(matcher.is_complete());
    EXPECT_FALSE(matcher.can_continue());
}

TEST(GrammarMatcher, RollbackReturnsToCheckpoint) {
    Grammar grammar = build(Expr::choice({Expr::literal("true"), Expr::literal("false")}));
    Matcher matcher(grammar);
    const Matcher::Checkpoint start = matcher.checkpoint();
    ASSERT_TRUE(matcher.accept_bytes("tru"));
    const Matcher::Checkpoint middle = matcher.checkpoint();
    ASSERT_TRUE(matcher.accept_byte('e'));
    EXPECT_TRUE(matcher.is_complete());
    matcher.rollback(middle);
    EXPECT_FALSE(matcher.is_complete());
    EXPECT_FALSE(matcher.accept_byte('x'));
    matcher.rollback(start);
    EXPECT_TRUE(matcher.accept_bytes("false"));
    EXPECT_TRUE(matcher.is_complete());
}

TEST(GrammarMatcher, DropHistoryKeepsTheCurrentState) {
    GrammarBuilder builder;
    RuleId nested = builder.add_rule();
    builder.define(nested,
                   Expr::choice({Expr::literal("x"),
                                 Expr::sequence({Expr::literal("("), Expr::reference(nested), Expr::literal(")")})}));
    Grammar grammar = std::move(builder.build(nested).value());
    Matcher matcher(grammar);
    ASSERT_TRUE(matcher.accept_bytes("((("));
    matcher.drop_history();
    EXPECT_FALSE(matcher.accept_bytes("x))))"));
    ASSERT_TRUE(matcher.accept_bytes("x))"));
    EXPECT_FALSE(matcher.is_complete());
    EXPECT_TRUE(matcher.accept_byte(')'));
    EXPECT_TRUE(matcher.is_complete());
}

TEST(GrammarMatcher, UndefinedRuleIsAnError) {
    GrammarBuilder builder;
    RuleId root = builder.add_rule();
    RuleId missing = builder.add_rule();
    builder.define(root, Expr::reference(missing));
    EXPECT_FALSE(builder.build(root));
}

}  // namespace grammar_matcher_test
}  // namespace
}  // namespace tempered::grammar
