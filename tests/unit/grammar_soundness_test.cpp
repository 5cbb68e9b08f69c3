// The two places where compiling JSON Schema to a grammar could accept more than the schema: extra
// members that repeat a declared name (jsonschema checks those against the declared schema, not
// additionalProperties), and oneOf, compiled as anyOf, which needs branches no value can satisfy twice.
#include <gtest/gtest.h>

#include <string>

#include "grammar/json_schema.h"
#include "grammar_test_support.h"

namespace tempered::grammar {
namespace {
namespace grammar_soundness_test {

using testing::matches;
using testing::schema_error;
using testing::schema_grammar;

TEST(GrammarSoundness, ExtraKeysNeverRepeatADeclaredName) {
    Grammar grammar = schema_grammar(R"({"type": "object", "properties": {"id": {"type": "integer"},
        "name": {"type": "integer"}}, "required": ["id"], "additionalProperties": {"type": "string"}})");
    EXPECT_TRUE(matches(grammar, R"({"id": 1, "x": "a"})"));
    EXPECT_FALSE(matches(grammar, R"({"id": 1, "id": "a"})"));
    EXPECT_FALSE(matches(grammar, R"({"id": 1, "name": "a"})"));
    // Prefixes and extensions of declared names are other names.
    EXPECT_TRUE(matches(grammar, R"({"id": 1, "i": "a"})"));
    EXPECT_TRUE(matches(grammar, R"({"id": 1, "idx": "a"})"));
    EXPECT_TRUE(matches(grammar, R"({"id": 1, "nam": "a", "names": "b", "": "c"})"));
    // An escaped spelling of a declared name is refused; escapes that leave every name are fine.
    EXPECT_FALSE(matches(grammar, R"({"id": 1, "\u0069d": "a"})"));
    EXPECT_FALSE(matches(grammar, R"({"id": 1, "n\u0061me": "a"})"));
    EXPECT_TRUE(matches(grammar, R"({"id": 1, "\n": "a", "x\u0069d": "b"})"));
}

TEST(GrammarSoundness, ExtraKeysAgainstNamesWithUnicodeAndEscapes) {
    Grammar grammar = schema_grammar(R"({"properties": {"é": {"type": "null"}, "a\"b": {"type": "null"},
        "t\u0001": {"type": "null"}}, "additionalProperties": {"type": "boolean"}})");
    EXPECT_FALSE(matches(grammar, R"({"é": true})"));
    EXPECT_FALSE(matches(grammar, R"({"a\"b": true})"));
    EXPECT_FALSE(matches(grammar, R"({"a\u0022b": true})"));  // not canonical while inside a name
    EXPECT_FALSE(matches(grammar, R"({"t\u0001": true})"));
    EXPECT_TRUE(matches(grammar, R"({"é": null, "è": true, "éa": false, "a\"": true, "a\\b": true})"));
    EXPECT_TRUE(matches(grammar, R"({"a\nb": true, "t\n": true})"));
    // The documented restriction: inside a name's \u00xx escape a key may only follow that name.
    EXPECT_FALSE(matches(grammar, R"({"t\u0002": true})"));
    EXPECT_FALSE(matches(grammar, "{\"\xC3\x28\": true}"));  // malformed UTF-8 stays refused
}

TEST(GrammarSoundness, OneOfWithDisjointBranchesCompiles) {
    Grammar types = schema_grammar(R"({"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]})");
    EXPECT_TRUE(matches(types, "3"));
    EXPECT_TRUE(matches(types, R"("3")"));
    Grammar values = schema_grammar(R"({"oneOf": [{"const": 1}, {"enum": [2, "1"]}]})");
    EXPECT_TRUE(matches(values, "2"));
    Grammar tagged = schema_grammar(R"({"$defs": {"circle": {"type": "object", "properties": {
        "kind": {"const": "circle"}, "r": {"type": "number"}}, "required": ["kind", "r"]}},
        "oneOf": [{"$ref": "#/$defs/circle"}, {"type": "object", "properties": {"kind": {"enum": ["square", "rect"]},
        "side": {"type": "number"}}, "required": ["kind"]}]})");
    EXPECT_TRUE(matches(tagged, R"({"kind": "circle", "r": 1})"));
    EXPECT_TRUE(matches(tagged, R"({"kind": "rect"})"));
    EXPECT_FALSE(matches(tagged, R"({"kind": "circle"})"));
}

TEST(GrammarSoundness, OneOfThatMayMatchTwiceIsAnErrorSayingWhy) {
    SchemaError numbers = schema_error(R"({"oneOf": [{"type": "number"}, {"type": "integer", "minimum": 3}]})");
    EXPECT_EQ(numbers.keyword, "oneOf");
    EXPECT_EQ(numbers.pointer, "");
    EXPECT_NE(numbers.message.find("branches 0 and 1"), std::string::npos) << numbers.message;
    EXPECT_NE(numbers.message.find("number"), std::string::npos) << numbers.message;
    SchemaError values = schema_error(R"({"properties": {"v": {"oneOf": [{"enum": [1, 2]}, {"const": 2.0}]}}})");
    EXPECT_EQ(values.keyword, "oneOf");
    EXPECT_EQ(values.pointer, "/properties/v");
    // Objects told apart by a property only one of them requires may both match.
    SchemaError untagged = schema_error(R"({"oneOf": [{"type": "object", "properties": {"a": {"const": 1}},
        "required": ["a"]}, {"type": "object", "properties": {"a": {"const": 2}}}]})");
    EXPECT_EQ(untagged.keyword, "oneOf");
    EXPECT_NE(untagged.message.find("objects"), std::string::npos) << untagged.message;
    // Boolean-schema branches allow everything.
    EXPECT_EQ(schema_error(R"({"oneOf": [true, {"type": "null"}]})").keyword, "oneOf");
}

TEST(GrammarSoundness, SurrogateEscapesAreNotCharacters) {
    Grammar grammar = schema_grammar(R"({"type": "string", "minLength": 2, "maxLength": 2})");
    EXPECT_FALSE(matches(grammar, R"("\ud83d\ude00")"));  // one character to a validator
    EXPECT_FALSE(matches(grammar, R"("\uDC00a")"));
    EXPECT_TRUE(matches(grammar, R"("\ud7ffa")"));
    EXPECT_TRUE(matches(grammar, R"("\ue000a")"));
    EXPECT_TRUE(matches(grammar,
                        "\"\xF0\x9F\x98\x80"
                        "a\""));
}

}  // namespace grammar_soundness_test
}  // namespace
}  // namespace tempered::grammar
