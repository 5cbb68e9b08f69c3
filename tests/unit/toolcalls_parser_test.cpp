// Tool-call parsers per family: content and calls split apart, broken calls kept as content, and the
// streamed parse (any split of the text into deltas) equal to the whole one.
#include <gtest/gtest.h>

#include <random>

#include "toolcalls/tool_call_parser.h"

namespace tempered::toolcalls {
namespace {
namespace toolcalls_parser_test {

const std::string kWeatherCall =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>";

// Feeds `text` in pieces cut at `cuts` (sorted offsets) and returns everything said.
ParsedText parse_in_pieces(ToolCallFamily family, std::string_view text, const std::vector<size_t>& cuts) {
    auto parser = make_tool_call_parser(family);
    ParsedText out;
    size_t start = 0;
    for (size_t cut : cuts) {
        parser->feed(text.substr(start, cut - start), out);
        start = cut;
    }
    parser->feed(text.substr(start), out);
    parser->finish(out);
    return out;
}

void expect_same(const ParsedText& a, const ParsedText& b, std::string_view text) {
    EXPECT_EQ(a.content, b.content) << text;
    EXPECT_EQ(a.unparsed, b.unparsed) << text;
    ASSERT_EQ(a.calls.size(), b.calls.size()) << text;
    for (size_t i = 0; i < a.calls.size(); ++i) {
        EXPECT_EQ(a.calls[i].name, b.calls[i].name) << text;
        EXPECT_EQ(a.calls[i].arguments, b.calls[i].arguments) << text;
    }
}

TEST(HermesParser, OneBlockIsOneCallWithCompactArguments) {
    const ParsedText parsed = parse_tool_calls(ToolCallFamily::Hermes, kWeatherCall);
    EXPECT_EQ(parsed.content, "");
    ASSERT_EQ(parsed.calls.size(), 1u);
    EXPECT_EQ(parsed.calls[0].name, "get_weather");
    EXPECT_EQ(parsed.calls[0].arguments, R"({"city":"Paris","days":2})");
    EXPECT_EQ(parsed.unparsed, 0);
}

TEST(HermesParser, ParallelBlocksAndTheNewlinesBetweenThem) {
    const std::string text =
        kWeatherCall + "\n" +
        "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}}\n</tool_call>\n";
    const ParsedText parsed = parse_tool_calls(ToolCallFamily::Hermes, text);
    EXPECT_EQ(parsed.content, "");
    ASSERT_EQ(parsed.calls.size(), 2u);
    EXPECT_EQ(parsed.calls[1].name, "get_time");
    EXPECT_EQ(parsed.calls[1].arguments, R"({"zone":"CET"})");
}

TEST(HermesParser, TextAroundCallsIsContent) {
    const ParsedText parsed =
        parse_tool_calls(ToolCallFamily::Hermes, "Let me check.\n" + kWeatherCall + "\nDone, it is sunny.");
    EXPECT_EQ(parsed.content, "Let me check.Done, it is sunny.");
    EXPECT_EQ(parsed.calls.size(), 1u);
}

TEST(HermesParser, PlainAnswerIsUntouched) {
    const std::string text = "Paris is sunny.\n\nUse <b>tags</b> or a < sign.\n";
    const ParsedText parsed = parse_tool_calls(ToolCallFamily::Hermes, text);
    EXPECT_EQ(parsed.content, text);
    EXPECT_TRUE(parsed.calls.empty());
}

TEST(HermesParser, BlockThatDoesNotParseStaysContentVerbatim) {
    for (const std::string& text : {std::string("<tool_call>\n{\"name\": get_weather}\n</tool_call>"),
                                    std::string("<tool_call>\n{\"arguments\": {}}\n</tool_call>"),
                                    std::string("<tool_call>\n{\"name\": \"f\", \"arguments\": 3}\n</tool_call>"),
                                    std::string("Sure <tool_call>{\"name\": \"f\", \"argu")}) {
        const ParsedText parsed = parse_tool_calls(ToolCallFamily::Hermes, text);
        EXPECT_EQ(parsed.content, text);
        EXPECT_TRUE(parsed.calls.empty());
        EXPECT_EQ(parsed.unparsed, 1);
    }
}

TEST(HermesParser, UnclosedBlockThatParsesIsStillACall) {
    const ParsedText parsed =
        parse_tool_calls(ToolCallFamily::Hermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n");
    ASSERT_EQ(parsed.calls.size(), 1u);
    EXPECT_EQ(parsed.calls[0].arguments, "{}");
}

TEST(HermesParser, DoubleEncodedArgumentsAreDecoded) {
    const ParsedText parsed = parse_tool_calls(
        ToolCallFamily::Hermes, R"(<tool_call>{"name": "f", "arguments": "{\"a\": [1, 2]}"}</tool_call>)");
    ASSERT_EQ(parsed.calls.size(), 1u);
    EXPECT_EQ(parsed.calls[0].arguments, R"({"a":[1,2]})");
}

TEST(HermesParser, StreamsContentUntilAPossibleTagAndHoldsOnlyThat) {
    auto parser = make_tool_call_parser(ToolCallFamily::Hermes);
    ParsedText out;
    parser->feed("Sure, here", out);
    EXPECT_EQ(out.content, "Sure, here");
    parser->feed(" it is <tool", out);
    EXPECT_EQ(out.content, "Sure, here it is");  // the space might only separate a call; "<tool" might open one
    parser->feed("box> x", out);
    EXPECT_EQ(out.content, "Sure, here it is <toolbox> x");
    parser->feed(" <tool_call>{\"name\": \"f\", \"arguments\": {}}", out);
    EXPECT_TRUE(out.calls.empty());  // not closed yet
    parser->feed("</tool_call>", out);
    ASSERT_EQ(out.calls.size(), 1u);
    parser->finish(out);
    EXPECT_EQ(out.content, "Sure, here it is <toolbox> x");
}

// What Qwen2.5-Coder-0.5B actually writes at temperature 0 when given tools: no tags.
TEST(HermesParser, UntaggedCallsAtALineStartOrInAJsonFenceAreCalls) {
    const ParsedText bare = parse_tool_calls(ToolCallFamily::Hermes,
                                             "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
                                             "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Tokyo\"}}");
    EXPECT_EQ(bare.content, "");
    ASSERT_EQ(bare.calls.size(), 2u);
    EXPECT_EQ(bare.calls[1].arguments, R"({"city":"Tokyo"})");
    const ParsedText fenced = parse_tool_calls(
        ToolCallFamily::Hermes,
        "```json\n{\n  \"name\": \"get_time\",\n  \"arguments\": {\n    \"timezone\": \"Europe/Berlin\"\n  }\n}\n```");
    EXPECT_EQ(fenced.content, "");
    ASSERT_EQ(fenced.calls.size(), 1u);
    EXPECT_EQ(fenced.calls[0].name, "get_time");
    EXPECT_EQ(fenced.calls[0].arguments, R"({"timezone":"Europe/Berlin"})");
}

TEST(HermesParser, JsonThatIsNoCallOrNotAtALineStartStaysContent) {
    for (const std::string text : {"Write {\"name\": \"x\"} like that.", "{\"answer\": 42}",
                                   "```python\nprint({\"name\": 1})\n```", "```json\n{\"value\": 1}\n```"}) {
        const ParsedText parsed = parse_tool_calls(ToolCallFamily::Hermes, text);
        EXPECT_EQ(parsed.content, text);
        EXPECT_TRUE(parsed.calls.empty()) << text;
        EXPECT_EQ(parsed.unparsed, 0) << text;
    }
    // Untagged, an object is a call only when it holds exactly a name and arguments.
    for (const std::string answer : {"{\"name\": \"Ann\", \"age\": 3}", "{\"name\": \"Ann\"}",
                                     "```json\n{\"name\": \"Ann\", \"arguments\": {}, \"x\": 1}\n```"}) {
        const ParsedText parsed = parse_tool_calls(ToolCallFamily::Hermes, answer);
        EXPECT_EQ(parsed.content, answer);
        EXPECT_TRUE(parsed.calls.empty()) << answer;
        EXPECT_TRUE(parse_tool_calls(ToolCallFamily::Llama3Json, answer).calls.empty()) << answer;
    }
    const std::string broken = "```json\n{\"name\": \"f\", \"arguments\": {}} and more\n```";
    const ParsedText parsed = parse_tool_calls(ToolCallFamily::Hermes, broken);
    EXPECT_EQ(parsed.content, broken);
    EXPECT_TRUE(parsed.calls.empty());
}

TEST(LlamaJsonParser, WholeAnswerCallWithParametersWithAndWithoutPythonTag) {
    for (const std::string prefix : {"", "<|python_tag|>", "  "}) {
        const ParsedText parsed = parse_tool_calls(
            ToolCallFamily::Llama3Json, prefix + R"({"name": "get_weather", "parameters": {"city": "Oslo"}})");
        EXPECT_EQ(parsed.content, "") << prefix;
        ASSERT_EQ(parsed.calls.size(), 1u) << prefix;
        EXPECT_EQ(parsed.calls[0].name, "get_weather");
        EXPECT_EQ(parsed.calls[0].arguments, R"({"city":"Oslo"})");
    }
}

TEST(LlamaJsonParser, SeveralCallsSeparatedBySemicolons) {
    const ParsedText parsed = parse_tool_calls(
        ToolCallFamily::Llama3Json, R"({"name": "a", "parameters": {}}; {"name": "b", "arguments": {"x": 1}})");
    ASSERT_EQ(parsed.calls.size(), 2u);
    EXPECT_EQ(parsed.calls[1].name, "b");
    EXPECT_EQ(parsed.calls[1].arguments, R"({"x":1})");
}

TEST(LlamaJsonParser, TextAnswerStreamsAtOnceAndJsonThatIsNoCallStaysContent) {
    auto parser = make_tool_call_parser(ToolCallFamily::Llama3Json);
    ParsedText out;
    parser->feed(" Hel", out);
    EXPECT_EQ(out.content, " Hel");
    const std::string not_call = R"({"answer": 42})";
    const ParsedText parsed = parse_tool_calls(ToolCallFamily::Llama3Json, not_call);
    EXPECT_EQ(parsed.content, not_call);
    EXPECT_EQ(parsed.unparsed, 1);
}

TEST(MistralParser, ArrayAfterTheTagHoldsEveryCall) {
    const ParsedText parsed = parse_tool_calls(
        ToolCallFamily::Mistral,
        R"(On it.[TOOL_CALLS][{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"y": "]"}}])");
    EXPECT_EQ(parsed.content, "On it.");
    ASSERT_EQ(parsed.calls.size(), 2u);
    EXPECT_EQ(parsed.calls[1].arguments, R"({"y":"]"})");
}

TEST(MistralParser, TagWithoutJsonStaysContent) {
    const ParsedText parsed = parse_tool_calls(ToolCallFamily::Mistral, "[TOOL_CALLS] sorry, no");
    EXPECT_EQ(parsed.content, "[TOOL_CALLS] sorry, no");
    EXPECT_EQ(parsed.unparsed, 1);
}

// The property the streaming API promises: any cut of the output into deltas says exactly what the
// whole output says.
TEST(ToolCallParsers, EverySplitIntoDeltasEqualsTheWholeParse) {
    const std::vector<std::pair<ToolCallFamily, std::string>> cases = {
        {ToolCallFamily::Hermes, kWeatherCall},
        {ToolCallFamily::Hermes, "Checking.\n\n" + kWeatherCall + "\n" + kWeatherCall + "\n"},
        {ToolCallFamily::Hermes, "a <tool_c <tool_call>broken</tool_call> b\n " + kWeatherCall + " c "},
        {ToolCallFamily::Hermes, "text only \n with < and <tool and </tool_call>\n"},
        {ToolCallFamily::Hermes,
         "{\"name\": \"a\", \"arguments\": {\"k\": \"}\"}}\n{\"name\": \"b\"}\nthen {\"x\": 1}"},
        {ToolCallFamily::Hermes, "Sure:\n```json\n{\"name\": \"a\"}\n{\"name\": \"b\", \"arguments\": {}}\n```\nok"},
        {ToolCallFamily::Hermes, "``` `` ```json\n{\"nam ```json\n{\"name\": 1}\n```\n{\"name\""},
        {ToolCallFamily::Llama3Json, R"(<|python_tag|>{"name": "a", "parameters": {"q": "x;y"}}; {"name": "b"})"},
        {ToolCallFamily::Llama3Json, " <|python_t is not a tag"},
        {ToolCallFamily::Mistral, R"(x [TOOL_CALLS] [{"name": "a", "arguments": {"s": "[{"}}] y)"},
        {ToolCallFamily::Mistral, "[TOOL_CALLS]nope [TOOL_CALLS][{\"name\": \"a\"}]"},
    };
    std::mt19937 random(7);
    for (const auto& [family, text] : cases) {
        const ParsedText whole = parse_tool_calls(family, text);
        std::vector<size_t> every_byte;
        for (size_t i = 1; i < text.size(); ++i) every_byte.push_back(i);
        expect_same(parse_in_pieces(family, text, every_byte), whole, text);
        for (int trial = 0; trial < 200; ++trial) {
            std::vector<size_t> cuts;
            for (size_t i = 1; i < text.size(); ++i)
                if (random() % 5 == 0) cuts.push_back(i);
            expect_same(parse_in_pieces(family, text, cuts), whole, text);
        }
    }
}

TEST(ToolCallFamilies, ChosenFromTheTemplatesMarkers) {
    EXPECT_EQ(detect_family("...<tool_call>\\n{\"name\": <function-name>...</tool_call>"), ToolCallFamily::Hermes);
    EXPECT_EQ(detect_family("{%- if message.tool_calls %}[TOOL_CALLS]{{ calls | tojson }}"), ToolCallFamily::Mistral);
    EXPECT_EQ(detect_family("<|start_header_id|>ipython<|end_header_id|>{{- '<|python_tag|>' }}"),
              ToolCallFamily::Llama3Json);
    EXPECT_EQ(detect_family("<|start_header_id|>{\"name\": function name, \"parameters\": dictionary}"),
              ToolCallFamily::Llama3Json);
    EXPECT_EQ(detect_family("<|im_start|>{{ message.content }}<|im_end|>"), std::nullopt);
    for (ToolCallFamily family : {ToolCallFamily::Hermes, ToolCallFamily::Llama3Json, ToolCallFamily::Mistral})
        EXPECT_EQ(family_from_name(family_name(family)), family);
    EXPECT_EQ(family_from_name("qwen"), std::nullopt);
}

}  // namespace toolcalls_parser_test
}  // namespace
}  // namespace tempered::toolcalls
