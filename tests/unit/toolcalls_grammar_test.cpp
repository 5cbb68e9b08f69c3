// The call-region grammar per family (not yet wired into generation): calls in the family's syntax that
// name a declared tool with valid arguments are accepted; undeclared names, bad arguments, broken syntax
// and a second call when parallel_tool_calls is false are rejected.
#include <gtest/gtest.h>

#include "grammar/matcher.h"
#include "toolcalls/tool_call_grammar.h"

namespace tempered::toolcalls {
namespace {
namespace toolcalls_grammar_test {

using json = nlohmann::ordered_json;

const char* kTools = R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}}, "required": ["city"],
        "additionalProperties": false}}},
    {"type": "function", "function": {"name": "add", "parameters": {"type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}}])";

bool accepts(const grammar::Grammar& grammar, std::string_view text) {
    grammar::Matcher matcher(grammar);
    return matcher.accept_bytes(text) && matcher.is_complete();
}

grammar::Grammar call_grammar(ToolCallFamily family, const DeclaredTools& tools, bool parallel) {
    auto built = build_tool_call_grammar({family, &tools, parallel});
    EXPECT_TRUE(built) << (built ? "" : built.error().message);
    return built ? std::move(built.value()) : grammar::Grammar{};
}

const std::string kWeather =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>";
const std::string kAdd = "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": -2}}\n</tool_call>";

TEST(ToolCallGrammar, HermesAcceptsDeclaredCallsWithValidArguments) {
    const auto tools = DeclaredTools::from_request(json::parse(kTools));
    ASSERT_TRUE(tools);
    const grammar::Grammar grammar = call_grammar(ToolCallFamily::Hermes, *tools, true);
    EXPECT_TRUE(accepts(grammar, kWeather));
    EXPECT_TRUE(accepts(grammar, kAdd));
    EXPECT_TRUE(accepts(grammar,
                        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"unit\": \"c\"}}"
                        "\n</tool_call>"));
    EXPECT_TRUE(accepts(grammar, kWeather + "\n" + kAdd + "\n" + kWeather));
}

TEST(ToolCallGrammar, HermesRejectsUndeclaredNamesBadArgumentsAndBrokenSyntax) {
    const auto tools = DeclaredTools::from_request(json::parse(kTools));
    ASSERT_TRUE(tools);
    const grammar::Grammar grammar = call_grammar(ToolCallFamily::Hermes, *tools, true);
    for (const std::string& text : {
             std::string("<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"x\"}}\n</tool_call>"),
             std::string("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"town\": \"Oslo\"}}\n</tool_call>"),
             std::string("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": 3}}\n</tool_call>"),
             std::string("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"O\", \"unit\": \"k\"}}"
                         "\n</tool_call>"),
             std::string("<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1.5, \"b\": 2}}\n</tool_call>"),
             std::string("<tool_call>{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}</tool_call>"),
             std::string("<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n"),
             std::string("{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}"),
             kWeather + kAdd,
         }) {
        EXPECT_FALSE(accepts(grammar, text)) << text;
    }
}

TEST(ToolCallGrammar, OneCallOnlyWithoutParallelCalls) {
    const auto tools = DeclaredTools::from_request(json::parse(kTools));
    ASSERT_TRUE(tools);
    const grammar::Grammar grammar = call_grammar(ToolCallFamily::Hermes, *tools, false);
    EXPECT_TRUE(accepts(grammar, kWeather));
    EXPECT_FALSE(accepts(grammar, kWeather + "\n" + kAdd));
}

TEST(ToolCallGrammar, NamedToolChoiceAllowsOnlyThatName) {
    const auto tools = DeclaredTools::from_request(json::parse(kTools), "add");
    ASSERT_TRUE(tools);
    const grammar::Grammar grammar = call_grammar(ToolCallFamily::Hermes, *tools, true);
    EXPECT_TRUE(accepts(grammar, kAdd));
    EXPECT_FALSE(accepts(grammar, kWeather));
}

TEST(ToolCallGrammar, LlamaAndMistralSyntax) {
    const auto tools = DeclaredTools::from_request(json::parse(kTools));
    ASSERT_TRUE(tools);
    const grammar::Grammar llama = call_grammar(ToolCallFamily::Llama3Json, *tools, true);
    EXPECT_TRUE(accepts(llama, R"({"name": "add", "parameters": {"a": 1, "b": 2}})"));
    EXPECT_TRUE(accepts(
        llama,
        R"({"name": "add", "parameters": {"a": 1, "b": 2}}; {"name": "get_weather", "parameters": {"city": "x"}})"));
    EXPECT_FALSE(accepts(llama, R"({"name": "add", "arguments": {"a": 1, "b": 2}})"));
    EXPECT_FALSE(accepts(llama, R"({"name": "mul", "parameters": {"a": 1, "b": 2}})"));
    const grammar::Grammar mistral = call_grammar(ToolCallFamily::Mistral, *tools, true);
    EXPECT_TRUE(accepts(mistral, R"([TOOL_CALLS][{"name": "add", "arguments": {"a": 1, "b": 2}}])"));
    EXPECT_TRUE(accepts(
        mistral,
        R"([TOOL_CALLS][{"name": "add", "arguments": {"a": 1, "b": 2}}, {"name": "get_weather", "arguments": {"city": "x"}}])"));
    EXPECT_FALSE(accepts(mistral, R"([TOOL_CALLS][])"));
    EXPECT_FALSE(accepts(mistral, R"([TOOL_CALLS][{"name": "add", "arguments": {"a": 1}}])"));
}

// What the grammar lets a model write, the family's parser reads back as valid declared calls.
TEST(ToolCallGrammar, AcceptedCallsParseBackAsValidCalls) {
    const auto tools = DeclaredTools::from_request(json::parse(kTools));
    ASSERT_TRUE(tools);
    const std::vector<std::pair<ToolCallFamily, std::string>> cases = {
        {ToolCallFamily::Hermes, kWeather + "\n" + kAdd},
        {ToolCallFamily::Llama3Json,
         R"({"name": "add", "parameters": {"a": 1, "b": 2}}; {"name": "add", "parameters": {"a": 3, "b": 4}})"},
        {ToolCallFamily::Mistral, R"([TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "x", "unit": "f"}}])"},
    };
    for (const auto& [family, text] : cases) {
        ASSERT_TRUE(accepts(call_grammar(family, *tools, true), text)) << text;
        const ParsedText parsed = parse_tool_calls(family, text);
        EXPECT_EQ(parsed.content, "") << text;
        ASSERT_FALSE(parsed.calls.empty()) << text;
        for (const ParsedToolCall& call : parsed.calls) EXPECT_EQ(tools->check(call).outcome, CallOutcome::Valid);
    }
}

TEST(ToolCallGrammar, NoDeclaredToolIsAnError) {
    const auto tools = DeclaredTools::from_request(json::array());
    ASSERT_TRUE(tools);
    EXPECT_FALSE(build_tool_call_grammar({ToolCallFamily::Hermes, &*tools, true}));
}

}  // namespace toolcalls_grammar_test
}  // namespace
}  // namespace tempered::toolcalls
