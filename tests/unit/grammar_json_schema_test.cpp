// JSON Schema -> grammar: each supported keyword accepts valid instances in the canonical layout and
// rejects invalid ones; unsupported keywords fail naming the keyword and where it is.
#include <gtest/gtest.h>

#include "grammar/json_schema.h"
#include "grammar_test_support.h"

namespace tempered::grammar {
namespace {
namespace grammar_json_schema_test {

using testing::is_viable_prefix;
using testing::matches;
using testing::schema_error;
using testing::schema_grammar;

TEST(GrammarJsonSchema, Scalars) {
    Grammar boolean = schema_grammar(R"({"type": "boolean"})");
    EXPECT_TRUE(matches(boolean, "true"));
    EXPECT_TRUE(matches(boolean, "false"));
    EXPECT_FALSE(matches(boolean, "null"));
    Grammar null = schema_grammar(R"({"type": "null"})");
    EXPECT_TRUE(matches(null, "null"));
    Grammar number = schema_grammar(R"({"type": "number"})");
    for (const char* ok : {"0", "-0", "12", "-3.25", "1e10", "2.5E-3"}) EXPECT_TRUE(matches(number, ok)) << ok;
    for (const char* bad : {"01", "1.", ".5", "+1", "1e", "--1", "\"1\""}) EXPECT_FALSE(matches(number, bad)) << bad;
    Grammar integer = schema_grammar(R"({"type": "integer"})");
    EXPECT_TRUE(matches(integer, "-42"));
    EXPECT_FALSE(matches(integer, "4.2"));
}

TEST(GrammarJsonSchema, TypeArrayIsAChoice) {
    Grammar grammar = schema_grammar(R"({"type": ["string", "null"], "maxLength": 2})");
    EXPECT_TRUE(matches(grammar, "null"));
    EXPECT_TRUE(matches(grammar, R"("ab")"));
    EXPECT_FALSE(matches(grammar, R"("abc")"));
    EXPECT_FALSE(matches(grammar, "1"));
}

TEST(GrammarJsonSchema, StringsHoldEscapesAndUtf8) {
    Grammar grammar = schema_grammar(R"({"type": "string"})");
    EXPECT_TRUE(matches(grammar, R"("a \"quoted\" \\ line\n \u00e9")"));
    EXPECT_TRUE(matches(grammar, "\"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\""));
    EXPECT_FALSE(matches(grammar, "\"raw\nnewline\""));
    EXPECT_FALSE(matches(grammar, R"("bad \x escape")"));
    EXPECT_FALSE(matches(grammar, "\"\xC3\""));              // truncated UTF-8
    EXPECT_FALSE(matches(grammar, "\"\xED\xA0\x80\""));      // a UTF-16 surrogate
    EXPECT_FALSE(matches(grammar, "\"\xE0\x80\xAF\""));      // overlong "/"
    EXPECT_FALSE(matches(grammar, "\"\xF4\x90\x80\x80\""));  // above U+10FFFF
    EXPECT_TRUE(matches(grammar, "\"\xF4\x8F\xBF\xBF\""));
    EXPECT_FALSE(matches(grammar, "\"\xFF\""));
}

TEST(GrammarJsonSchema, LengthCountsCharactersNotBytes) {
    Grammar grammar = schema_grammar(R"({"type": "string", "minLength": 2, "maxLength": 3})");
    EXPECT_FALSE(matches(grammar, R"("a")"));
    EXPECT_TRUE(matches(grammar, R"("ab")"));
    EXPECT_TRUE(matches(grammar, "\"\xC3\xA9\\n\xC3\xA9\""));
    EXPECT_FALSE(matches(grammar, R"("abcd")"));
}

TEST(GrammarJsonSchema, EnumAndConstAreCanonicalLiterals) {
    Grammar colors = schema_grammar(R"({"enum": ["red", "green", 3, null, {"a": [1, 2]}]})");
    for (const char* ok : {R"("red")", R"("green")", "3", "null", R"({"a": [1, 2]})"})
        EXPECT_TRUE(matches(colors, ok)) << ok;
    EXPECT_FALSE(matches(colors, R"("blue")"));
    EXPECT_FALSE(matches(colors, R"({"a":[1,2]})"));  // not the canonical layout
    Grammar fixed = schema_grammar(R"({"const": "get_weather"})");
    EXPECT_TRUE(matches(fixed, R"("get_weather")"));
    EXPECT_FALSE(matches(fixed, R"("get_weathe")"));
}

TEST(GrammarJsonSchema, ObjectRequiredAndOptionalInSchemaOrder) {
    Grammar grammar = schema_grammar(R"({"type": "object", "properties": {"name": {"type": "string"},
        "age": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["name"], "additionalProperties": false})");
    EXPECT_TRUE(matches(grammar, R"({"name": "Ann"})"));
    EXPECT_TRUE(matches(grammar, R"({"name": "Ann", "age": 7})"));
    EXPECT_TRUE(matches(grammar, R"({"name": "Ann", "tags": ["a", "b"]})"));
    EXPECT_TRUE(matches(grammar, R"({"name": "Ann", "age": 7, "tags": []})"));
    EXPECT_FALSE(matches(grammar, R"({"age": 7})"));                 // name is required
    EXPECT_FALSE(matches(grammar, R"({"age": 7, "name": "Ann"})"));  // schema order
    EXPECT_FALSE(matches(grammar, R"({"name": "Ann", "other": 1})"));
    EXPECT_FALSE(matches(grammar, R"({"name":"Ann"})"));  // canonical separators
    EXPECT_FALSE(matches(grammar, R"({"name": "Ann", })"));
}

TEST(GrammarJsonSchema, AllOptionalObjectMayBeEmpty) {
    Grammar grammar = schema_grammar(R"({"properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}})");
    EXPECT_TRUE(matches(grammar, "{}"));
    EXPECT_TRUE(matches(grammar, R"({"b": 2})"));
    EXPECT_TRUE(matches(grammar, R"({"a": 1, "b": 2})"));
    EXPECT_FALSE(matches(grammar, R"({, "b": 2})"));
}

TEST(GrammarJsonSchema, AdditionalPropertiesSchemaAppliesToExtraMembers) {
    Grammar grammar = schema_grammar(R"({"type": "object", "properties": {"id": {"type": "integer"}},
        "required": ["id"], "additionalProperties": {"type": "boolean"}})");
    EXPECT_TRUE(matches(grammar, R"({"id": 1, "x": true, "y": false})"));
    EXPECT_FALSE(matches(grammar, R"({"id": 1, "x": 3})"));
    Grammar any_object = schema_grammar(R"({"type": "object"})");
    EXPECT_TRUE(matches(any_object, R"({"k": [1, {"n": null}], "s": "v"})"));
    EXPECT_FALSE(matches(any_object, "[]"));
}

TEST(GrammarJsonSchema, JsonObjectModeIsAnyObject) {
    Grammar grammar = json_object_grammar();
    EXPECT_TRUE(matches(grammar, "{}"));
    EXPECT_TRUE(matches(grammar, R"({"a": {"b": [true, 1.5, "x"]}})"));
    EXPECT_FALSE(matches(grammar, R"("text")"));
    EXPECT_FALSE(matches(grammar, R"({"a": 1,})"));
}

TEST(GrammarJsonSchema, ArrayItemsAndCounts) {
    Grammar grammar =
        schema_grammar(R"({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3})");
    EXPECT_FALSE(matches(grammar, "[]"));
    EXPECT_TRUE(matches(grammar, "[1]"));
    EXPECT_TRUE(matches(grammar, "[1, 2, 3]"));
    EXPECT_FALSE(matches(grammar, "[1, 2, 3, 4]"));
    EXPECT_FALSE(matches(grammar, "[1, \"2\"]"));
    Grammar unbounded = schema_grammar(R"({"type": "array"})");
    EXPECT_TRUE(matches(unbounded, "[]"));
    EXPECT_TRUE(matches(unbounded, R"([1, "a", [null]])"));
}

TEST(GrammarJsonSchema, PrefixItemsThenItems) {
    Grammar tuple = schema_grammar(R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}],
        "minItems": 1})");
    EXPECT_TRUE(matches(tuple, R"(["a"])"));
    EXPECT_TRUE(matches(tuple, R"(["a", 1])"));
    EXPECT_FALSE(matches(tuple, "[]"));
    EXPECT_FALSE(matches(tuple, R"(["a", 1, 2])"));  // no items: a closed tuple
    Grammar open = schema_grammar(R"({"prefixItems": [{"const": 0}], "items": {"type": "boolean"}, "maxItems": 3})");
    EXPECT_TRUE(matches(open, "[0, true, false]"));
    EXPECT_FALSE(matches(open, "[0, true, false, true]"));
    EXPECT_FALSE(matches(open, "[true]"));
}

TEST(GrammarJsonSchema, AnyOfAndOneOf) {
    Grammar grammar = schema_grammar(R"({"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 1}],
        "description": "ignored"})");
    EXPECT_TRUE(matches(grammar, "5"));
    EXPECT_TRUE(matches(grammar, R"("x")"));
    EXPECT_FALSE(matches(grammar, R"("xy")"));
    Grammar one = schema_grammar(R"({"oneOf": [{"const": 1}, {"const": 2}]})");
    EXPECT_TRUE(matches(one, "2"));
    EXPECT_FALSE(matches(one, "3"));
}

TEST(GrammarJsonSchema, RefsIncludingRecursion) {
    Grammar tree = schema_grammar(R"({"$defs": {"node": {"type": "object", "properties": {
        "value": {"type": "integer"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
        "required": ["value"]}}, "$ref": "#/$defs/node"})");
    EXPECT_TRUE(matches(tree, R"({"value": 1})"));
    EXPECT_TRUE(matches(tree, R"({"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}, {"value": 4}]})"));
    EXPECT_FALSE(matches(tree, R"({"value": 1, "children": [{"children": []}]})"));
    Grammar list =
        schema_grammar(R"({"type": "object", "properties": {"next": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}},
        "required": ["next"]})");
    EXPECT_TRUE(matches(list, R"({"next": {"next": {"next": null}}})"));
    Grammar legacy = schema_grammar(
        R"({"definitions": {"id": {"type": "integer"}}, "properties": {"id": {"$ref": "#/definitions/id"}}})");
    EXPECT_TRUE(matches(legacy, R"({"id": 7})"));
}

TEST(GrammarJsonSchema, IntegerBoundsAreExact) {
    Grammar grammar = schema_grammar(R"({"type": "integer", "minimum": -15, "maximum": 237})");
    for (int n = -40; n <= 300; ++n) {
        EXPECT_EQ(matches(grammar, std::to_string(n)), n >= -15 && n <= 237) << n;
    }
    Grammar exclusive = schema_grammar(R"({"type": "integer", "exclusiveMinimum": 9, "exclusiveMaximum": 1000})");
    for (int n = 0; n <= 1100; ++n) EXPECT_EQ(matches(exclusive, std::to_string(n)), n > 9 && n < 1000) << n;
    Grammar open_above = schema_grammar(R"({"type": "integer", "minimum": 95})");
    EXPECT_FALSE(matches(open_above, "94"));
    EXPECT_TRUE(matches(open_above, "95"));
    EXPECT_TRUE(matches(open_above, "100000000000"));
    EXPECT_FALSE(matches(open_above, "-100"));
    Grammar negative = schema_grammar(R"({"type": "integer", "maximum": -3})");
    EXPECT_TRUE(matches(negative, "-3"));
    EXPECT_TRUE(matches(negative, "-12345"));
    EXPECT_FALSE(matches(negative, "-2"));
    EXPECT_FALSE(matches(negative, "0"));
}

TEST(GrammarJsonSchema, NumberBoundsNeverAdmitOutOfRange) {
    Grammar grammar = schema_grammar(R"({"type": "number", "minimum": 0.5, "exclusiveMaximum": 10})");
    EXPECT_TRUE(matches(grammar, "1"));
    EXPECT_TRUE(matches(grammar, "9.75"));
    EXPECT_TRUE(matches(grammar, "1.5"));
    EXPECT_FALSE(matches(grammar, "10"));
    EXPECT_FALSE(matches(grammar, "10.5"));
    EXPECT_FALSE(matches(grammar, "0"));
    EXPECT_FALSE(matches(grammar, "-1"));
    EXPECT_FALSE(matches(grammar, "1e3"));
}

TEST(GrammarJsonSchema, PatternAndFormats) {
    Grammar code = schema_grammar(R"({"type": "string", "pattern": "^[A-Z]{3}-\\d{2,4}$"})");
    EXPECT_TRUE(matches(code, R"("ABC-12")"));
    EXPECT_TRUE(matches(code, R"("XYZ-1234")"));
    EXPECT_FALSE(matches(code, R"("AB-12")"));
    EXPECT_FALSE(matches(code, R"("ABC-12345")"));
    Grammar date = schema_grammar(R"({"type": "string", "format": "date"})");
    EXPECT_TRUE(matches(date, R"("2024-02-29")"));
    EXPECT_FALSE(matches(date, R"("2024-13-01")"));
    Grammar time = schema_grammar(R"({"type": "string", "format": "time"})");
    EXPECT_TRUE(matches(time, R"("23:59:07Z")"));
    EXPECT_TRUE(matches(time, R"("08:00:00.25+02:00")"));
    EXPECT_FALSE(matches(time, R"("24:00:00Z")"));
    Grammar date_time = schema_grammar(R"({"type": "string", "format": "date-time"})");
    EXPECT_TRUE(matches(date_time, R"("2025-11-30T12:00:00Z")"));
    EXPECT_FALSE(matches(date_time, R"("2025-11-30 12:00:00Z")"));
    Grammar uuid = schema_grammar(R"({"type": "string", "format": "uuid"})");
    EXPECT_TRUE(matches(uuid, R"("123e4567-e89b-12d3-a456-426614174000")"));
    EXPECT_FALSE(matches(uuid, R"("123e4567-e89b-12d3-a456-42661417400")"));
    Grammar email = schema_grammar(R"({"type": "string", "format": "email"})");
    EXPECT_TRUE(matches(email, R"("ann.lee+x@mail.example.org")"));
    EXPECT_FALSE(matches(email, R"("ann@localhost")"));
    EXPECT_FALSE(matches(email, R"("no-at-sign.org")"));
}

TEST(GrammarJsonSchema, AnnotationsAreIgnored) {
    Grammar grammar = schema_grammar(R"({"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "x",
        "title": "T", "description": "D", "default": 1, "examples": [1], "$comment": "c", "type": "integer"})");
    EXPECT_TRUE(matches(grammar, "1"));
}

TEST(GrammarJsonSchema, UnsupportedKeywordNamesKeywordAndPointer) {
    SchemaError top = schema_error(R"({"type": "integer", "multipleOf": 3})");
    EXPECT_EQ(top.keyword, "multipleOf");
    EXPECT_EQ(top.pointer, "");
    SchemaError nested = schema_error(R"({"type": "object", "properties": {"a/b": {"type": "array",
        "items": {"allOf": [{"type": "string"}]}}}})");
    EXPECT_EQ(nested.keyword, "allOf");
    EXPECT_EQ(nested.pointer, "/properties/a~1b/items");
    EXPECT_NE(nested.message.find("allOf"), std::string::npos);
    EXPECT_NE(nested.message.find("/properties/a~1b/items"), std::string::npos);
    SchemaError in_defs = schema_error(R"({"$ref": "#/$defs/x", "$defs": {"x": {"uniqueItems": true}}})");
    EXPECT_EQ(in_defs.keyword, "uniqueItems");
    EXPECT_EQ(in_defs.pointer, "/$defs/x");
}

TEST(GrammarJsonSchema, MalformedSchemasAreErrors) {
    EXPECT_EQ(schema_error(R"({"type": "strnig"})").keyword, "type");
    EXPECT_EQ(schema_error(R"({"$ref": "#/$defs/missing"})").keyword, "$ref");
    EXPECT_EQ(schema_error(R"({"$ref": "https://example.com/schema"})").keyword, "$ref");
    EXPECT_EQ(schema_error(R"({"type": "string", "format": "hostname"})").keyword, "format");
    EXPECT_EQ(schema_error(R"J({"type": "string", "pattern": "(?=x)"})J").keyword, "pattern");
    EXPECT_EQ(schema_error(R"({"type": "string", "pattern": "a", "maxLength": 3})").keyword, "minLength");
    EXPECT_EQ(schema_error(R"({"type": "integer", "minimum": 5, "maximum": 4})").keyword, "minimum");
    EXPECT_EQ(schema_error(R"({"type": "array", "minItems": 3, "maxItems": 2})").keyword, "maxItems");
    EXPECT_EQ(schema_error(R"({"enum": []})").keyword, "enum");
    EXPECT_EQ(schema_error("false").keyword, "false");
}

TEST(GrammarJsonSchema, ViablePrefixesOfToolArguments) {
    Grammar grammar = schema_grammar(R"({"type": "object", "properties": {"city": {"type": "string"},
        "unit": {"enum": ["celsius", "fahrenheit"]}}, "required": ["city", "unit"], "additionalProperties": false})");
    EXPECT_TRUE(is_viable_prefix(grammar, R"({"city": "Par)"));
    EXPECT_TRUE(is_viable_prefix(grammar, R"({"city": "Paris", "unit": "fahr)"));
    EXPECT_FALSE(is_viable_prefix(grammar, R"({"city": "Paris", "unit": "kel)"));
    EXPECT_FALSE(is_viable_prefix(grammar, R"({"town)"));
}

}  // namespace grammar_json_schema_test
}  // namespace
}  // namespace tempered::grammar
