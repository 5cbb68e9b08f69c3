// The validator of tool-call arguments against Python's `jsonschema` (4.26, Draft202012Validator): every
// expectation in the table is what `Draft202012Validator(schema).is_valid(instance)` answered. Also the
// declared-tools check (names, schemas our compiler refuses).
#include <gtest/gtest.h>

#include "toolcalls/arguments_validator.h"
#include "toolcalls/declared_tools.h"

namespace tempered::toolcalls {
namespace {
namespace toolcalls_validator_test {

using json = nlohmann::ordered_json;

struct Case {
    const char* schema;
    const char* instance;
    bool valid;
};

const Case kCases[] = {
    {R"({"type": "object", "properties": {"city": {"type": "string", "minLength": 2}, "days": {"type": "integer", "minimum": 1, "maximum": 7}}, "required": ["city"]})",
     R"({"city": "Paris"})", true},
    {R"({"type": "object", "properties": {"city": {"type": "string", "minLength": 2}, "days": {"type": "integer", "minimum": 1, "maximum": 7}}, "required": ["city"]})",
     R"({"city": "Paris", "days": 3})", true},
    {R"({"type": "object", "properties": {"city": {"type": "string", "minLength": 2}, "days": {"type": "integer", "minimum": 1, "maximum": 7}}, "required": ["city"]})",
     R"({"days": 3})", false},
    {R"({"type": "object", "properties": {"city": {"type": "string", "minLength": 2}, "days": {"type": "integer", "minimum": 1, "maximum": 7}}, "required": ["city"]})",
     R"({"city": "P"})", false},
    {R"({"type": "object", "properties": {"city": {"type": "string", "minLength": 2}, "days": {"type": "integer", "minimum": 1, "maximum": 7}}, "required": ["city"]})",
     R"({"city": "Paris", "days": 0})", false},
    {R"({"type": "object", "properties": {"city": {"type": "string", "minLength": 2}, "days": {"type": "integer", "minimum": 1, "maximum": 7}}, "required": ["city"]})",
     R"({"city": "Paris", "days": 2.0})", true},
    {R"({"type": "object", "properties": {"city": {"type": "string", "minLength": 2}, "days": {"type": "integer", "minimum": 1, "maximum": 7}}, "required": ["city"]})",
     R"({"city": "Paris", "days": 2.5})", false},
    {R"({"type": "object", "properties": {"city": {"type": "string", "minLength": 2}, "days": {"type": "integer", "minimum": 1, "maximum": 7}}, "required": ["city"]})",
     R"({"city": "Paris", "extra": true})", true},
    {R"({"type": "object", "properties": {"city": {"type": "string", "minLength": 2}, "days": {"type": "integer", "minimum": 1, "maximum": 7}}, "required": ["city"]})",
     R"({"city": "Paris", "days": true})", false},
    {R"({"type": "object", "properties": {"city": {"type": "string", "minLength": 2}, "days": {"type": "integer", "minimum": 1, "maximum": 7}}, "required": ["city"]})",
     R"(["Paris"])", false},
    {R"({"type": "object", "properties": {"a": {"type": "boolean"}}, "additionalProperties": false})", R"({})", true},
    {R"({"type": "object", "properties": {"a": {"type": "boolean"}}, "additionalProperties": false})",
     R"({"a": false})", true},
    {R"({"type": "object", "properties": {"a": {"type": "boolean"}}, "additionalProperties": false})", R"({"b": 1})",
     false},
    {R"({"type": "object", "properties": {"id": {"type": "integer"}}, "additionalProperties": {"type": "string"}})",
     R"({"id": 1, "x": "y"})", true},
    {R"({"type": "object", "properties": {"id": {"type": "integer"}}, "additionalProperties": {"type": "string"}})",
     R"({"id": 1, "x": 2})", false},
    {R"({"type": "array", "items": {"type": "number"}, "minItems": 1, "maxItems": 3})", R"([1.5])", true},
    {R"({"type": "array", "items": {"type": "number"}, "minItems": 1, "maxItems": 3})", R"([])", false},
    {R"({"type": "array", "items": {"type": "number"}, "minItems": 1, "maxItems": 3})", R"([1, 2, 3, 4])", false},
    {R"({"type": "array", "items": {"type": "number"}, "minItems": 1, "maxItems": 3})", R"(["1"])", false},
    {R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false})", R"(["a"])",
     true},
    {R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false})", R"(["a", 1])",
     true},
    {R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false})", R"(["a", 1, 2])",
     false},
    {R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false})", R"([1])", false},
    {R"({"enum": ["c", "f", 1, null, {"k": [1, 2]}]})", R"("c")", true},
    {R"({"enum": ["c", "f", 1, null, {"k": [1, 2]}]})", R"(1.0)", true},
    {R"({"enum": ["c", "f", 1, null, {"k": [1, 2]}]})", R"(true)", false},
    {R"({"enum": ["c", "f", 1, null, {"k": [1, 2]}]})", R"(null)", true},
    {R"({"enum": ["c", "f", 1, null, {"k": [1, 2]}]})", R"({"k": [1, 2]})", true},
    {R"({"enum": ["c", "f", 1, null, {"k": [1, 2]}]})", R"("x")", false},
    {R"({"const": {"a": 1, "b": [true]}})", R"({"b": [true], "a": 1})", true},
    {R"({"const": {"a": 1, "b": [true]}})", R"({"a": 1, "b": [1]})", false},
    {R"({"anyOf": [{"type": "integer", "exclusiveMinimum": 0}, {"type": "string", "pattern": "^x+$"}]})", R"(3)", true},
    {R"({"anyOf": [{"type": "integer", "exclusiveMinimum": 0}, {"type": "string", "pattern": "^x+$"}]})", R"(0)",
     false},
    {R"({"anyOf": [{"type": "integer", "exclusiveMinimum": 0}, {"type": "string", "pattern": "^x+$"}]})", R"("xx")",
     true},
    {R"({"anyOf": [{"type": "integer", "exclusiveMinimum": 0}, {"type": "string", "pattern": "^x+$"}]})", R"("xy")",
     false},
    {R"({"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 0}]})", R"(-1)", true},
    {R"({"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 0}]})", R"(1)", false},
    {R"({"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 0}]})", R"(0.5)", true},
    {R"({"$defs": {"n": {"type": "object", "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/n"}}}, "required": ["v"]}}, "$ref": "#/$defs/n"})",
     R"({"v": 1, "kids": [{"v": 2}, {"v": 3, "kids": []}]})", true},
    {R"({"$defs": {"n": {"type": "object", "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/n"}}}, "required": ["v"]}}, "$ref": "#/$defs/n"})",
     R"({"v": 1, "kids": [{"w": 2}]})", false},
    {R"({"type": ["string", "null"], "maxLength": 3})", R"(null)", true},
    {R"({"type": ["string", "null"], "maxLength": 3})", R"("abc")", true},
    {R"({"type": ["string", "null"], "maxLength": 3})", R"("abcd")", false},
    {R"({"type": ["string", "null"], "maxLength": 3})", R"(1)", false},
    {R"({"type": "string", "maxLength": 2})", R"("éé")", true},
    {R"({"type": "string", "maxLength": 2})", R"("ééé")", false},
    {R"({"type": "string", "format": "date"})", R"("not a date")", true},
    {R"({"type": "number", "exclusiveMaximum": 2.5})", R"(2.4)", true},
    {R"({"type": "number", "exclusiveMaximum": 2.5})", R"(2.5)", false},
    {R"(true)", R"({"a": 1})", true},
    {R"({"type": "object", "properties": {"a": false}})", R"({"a": 1})", false},
    {R"({"type": "object", "properties": {"a": false}})", R"({})", true},
};

TEST(ArgumentsValidator, AgreesWithPythonJsonschema) {
    for (const Case& c : kCases) {
        const auto violation = find_schema_violation(json::parse(c.schema), json::parse(c.instance));
        EXPECT_EQ(!violation.has_value(), c.valid)
            << c.schema << " on " << c.instance << ": " << violation.value_or("valid");
    }
}

TEST(ArgumentsValidator, SaysWhereAndWhy) {
    const auto violation = find_schema_violation(
        json::parse(R"({"type":"object","properties":{"city":{"type":"string"}}})"), json::parse(R"({"city":3})"));
    ASSERT_TRUE(violation);
    EXPECT_NE(violation->find("/city"), std::string::npos) << *violation;
    EXPECT_NE(violation->find("string"), std::string::npos) << *violation;
}

const char* kTools = R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
        "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "now"}}])";

TEST(DeclaredTools, ChecksNameThenArguments) {
    auto tools = DeclaredTools::from_request(json::parse(kTools));
    ASSERT_TRUE(tools);
    EXPECT_EQ(tools->check({"get_weather", R"({"city":"Oslo"})"}).outcome, CallOutcome::Valid);
    EXPECT_EQ(tools->check({"now", "{}"}).outcome, CallOutcome::Valid);
    const CallCheck unknown = tools->check({"search_web", R"({"q":"x"})"});
    EXPECT_EQ(unknown.outcome, CallOutcome::UnknownName);
    EXPECT_NE(unknown.reason.find("search_web"), std::string::npos);
    EXPECT_EQ(tools->check({"get_weather", R"({"town":"Oslo"})"}).outcome, CallOutcome::BadArguments);
    EXPECT_EQ(outcome_label(CallOutcome::BadArguments), "rejected_bad_arguments");
}

TEST(DeclaredTools, NamedToolChoiceLeavesOnlyThatTool) {
    auto tools = DeclaredTools::from_request(json::parse(kTools), "now");
    ASSERT_TRUE(tools);
    EXPECT_EQ(tools->check({"now", "{}"}).outcome, CallOutcome::Valid);
    EXPECT_EQ(tools->check({"get_weather", R"({"city":"Oslo"})"}).outcome, CallOutcome::UnknownName);
}

TEST(DeclaredTools, SchemaTheCompilerRefusesIsAnErrorNamingParamAndKeyword) {
    auto tools = DeclaredTools::from_request(json::parse(R"([
        {"type": "function", "function": {"name": "ok"}},
        {"type": "function", "function": {"name": "bad", "parameters": {"type": "object",
            "properties": {"a": {"allOf": [{"type": "string"}]}}}}}])"));
    ASSERT_FALSE(tools);
    EXPECT_EQ(tools.error().param, "tools[1].function.parameters");
    EXPECT_NE(tools.error().message.find("allOf"), std::string::npos) << tools.error().message;
}

}  // namespace toolcalls_validator_test
}  // namespace
}  // namespace tempered::toolcalls
