// gpt-oss's harmony format on the output side: the splitter (reasoning/harmony_splitter.h) on token ids, the
// reasoning phase's budget closing the analysis message and opening the final one, and the output processor with
// the harmony tool-call family (toolcalls/harmony_family.cpp): reasoning never in content, headers in neither,
// calls read from either header order, streamed equal to whole. Markers are ids 1-5; every other token is text.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "engine/reasoning_phase.h"
#include "grammar/matcher.h"
#include "output/output_processor.h"
#include "reasoning/harmony_splitter.h"
#include "toolcalls/declared_tools.h"
#include "toolcalls/tool_call_grammar.h"
#include "toolcalls/tool_call_parser.h"

namespace tempered {
namespace {
namespace harmony_test {

constexpr int32_t kStart = 1, kChannel = 2, kMessage = 3, kEnd = 4, kConstrain = 5, kText = 50;
const reasoning::HarmonyTokens kMarkers{kStart, kChannel, kMessage, kEnd, kConstrain};

// A token as the detokenizer hands it: markers render as their text (o200k_harmony's are user-defined).
using Piece = std::pair<int32_t, std::string>;
Piece start() { return {kStart, "<|start|>"}; }
Piece channel() { return {kChannel, "<|channel|>"}; }
Piece message() { return {kMessage, "<|message|>"}; }
Piece end() { return {kEnd, "<|end|>"}; }
Piece constrain() { return {kConstrain, "<|constrain|>"}; }
Piece text(std::string s) { return {kText, std::move(s)}; }

reasoning::SplitText split(const std::vector<Piece>& pieces, reasoning::HarmonySplitter& splitter) {
    reasoning::SplitText out;
    for (const auto& [token, piece] : pieces) splitter.feed(token, piece, out);
    splitter.finish("", out);
    return out;
}

// What gpt-oss writes after the template's "<|start|>assistant": reasoning, then the answer.
std::vector<Piece> analysis_then_final() {
    return {channel(),         text("analysis"), message(),     text("The user"), text(" greets."), end(),    start(),
            text("assistant"), channel(),        text("final"), message(),        text("Hello"),    text("!")};
}

TEST(HarmonySplitter, AnalysisIsReasoningFinalIsContentHeadersAreNeither) {
    reasoning::HarmonySplitter splitter(kMarkers);
    const auto out = split(analysis_then_final(), splitter);
    EXPECT_EQ(out.reasoning, "The user greets.");
    EXPECT_EQ(out.content, "Hello!");
    // The analysis header (<|channel|> analysis <|message|>), its two tokens and its <|end|>.
    EXPECT_EQ(splitter.reasoning_tokens(), 6);
    EXPECT_FALSE(splitter.in_reasoning());
    EXPECT_TRUE(splitter.in_answer());
}

TEST(HarmonySplitter, ACallIsRewrittenIntoTheTemplatesFormFromEitherHeaderOrder) {
    const std::string expected =
        "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Paris\"}<|call|>";
    {  // as gpt-oss writes it: channel first, then the recipient and <|constrain|>
        reasoning::HarmonySplitter splitter(kMarkers);
        const auto out = split({channel(), text("commentary"), text(" to=functions.get_weather"), text(" "),
                                constrain(), text("json"), message(), text("{\"city\": \"Paris\"}")},
                               splitter);
        EXPECT_EQ(out.content, expected);
        EXPECT_EQ(out.reasoning, "");
    }
    {  // as the template writes it: the recipient first
        reasoning::HarmonySplitter splitter(kMarkers);
        const auto out = split({text(" to=functions.get_weather"), channel(), text("commentary json"), message(),
                                text("{\"city\": \"Paris\"}")},
                               splitter);
        EXPECT_EQ(out.content, expected);
    }
}

TEST(HarmonySplitter, TextOutsideTheFormatIsContentNotLost) {
    reasoning::HarmonySplitter splitter(kMarkers);
    EXPECT_EQ(split({text("plain"), text(" words")}, splitter).content, "plain words");
    reasoning::HarmonySplitter long_header(kMarkers);
    std::vector<Piece> pieces(300, text("x"));
    reasoning::SplitText out;
    for (const auto& [token, piece] : pieces) long_header.feed(token, piece, out);
    EXPECT_GT(out.content.size(), reasoning::HarmonySplitter::kMaxHeaderBytes)
        << "a header that never ends is released before the output ends";
}

TEST(HarmonySplitter, ReadsHeaders) {
    using Kind = reasoning::HarmonyHeader::Kind;
    EXPECT_EQ(reasoning::read_harmony_header("<|channel|>analysis").kind, Kind::Reasoning);
    EXPECT_EQ(reasoning::read_harmony_header("assistant<|channel|>final").kind, Kind::Content);
    EXPECT_EQ(reasoning::read_harmony_header("<|channel|>commentary").kind, Kind::Content);  // a preamble
    const auto call = reasoning::read_harmony_header("<|channel|>commentary to=functions.lookup-v2 <|constrain|>json");
    EXPECT_EQ(call.kind, Kind::Call);
    EXPECT_EQ(call.function, "lookup-v2");
    EXPECT_EQ(reasoning::read_harmony_header("<|channel|>commentary to=browser.search").kind, Kind::Content);
}

// The budget closes the analysis message and opens the final one; a response format's grammar applies in the
// final body only, a lazy one (calls) outside reasoning and the forced end.
TEST(HarmonyReasoningPhase, TheBudgetForcesTheFinalChannel) {
    constexpr int32_t kAssistant = 60, kFinal = 61, kAnalysis = 62;
    ReasoningOptions options;
    options.harmony = kMarkers;
    options.budget = 3;
    options.forced_end = {kEnd, kStart, kAssistant, kChannel, kFinal, kMessage};
    ReasoningPhase phase(options);
    const auto text_of = [&](int32_t token) -> std::string {
        switch (token) {
            case kStart: return "<|start|>";
            case kChannel: return "<|channel|>";
            case kMessage: return "<|message|>";
            case kEnd: return "<|end|>";
            case kAssistant: return "assistant";
            case kFinal: return "final";
            case kAnalysis: return "analysis";
            default: return "w";
        }
    };
    const std::vector<int32_t> model = {kChannel, kAnalysis, kMessage};  // then words, forever
    std::string reasoning, content;
    std::vector<int32_t> tokens;
    std::vector<bool> grammar, lazy_grammar;
    for (int64_t generated = 0; generated < 14; ++generated) {
        grammar.push_back(phase.grammar_applies(/*lazy=*/false));
        lazy_grammar.push_back(phase.grammar_applies(/*lazy=*/true));
        const std::optional<int32_t> forced = phase.forced_token(generated, 100);
        const int32_t token = forced.value_or(generated < 3 ? model[static_cast<size_t>(generated)] : kText);
        const ReasoningText out = phase.on_token(token, forced.has_value(), text_of(token));
        reasoning += out.reasoning;
        content += out.content;
        tokens.push_back(token);
    }
    EXPECT_EQ(tokens, (std::vector<int32_t>{kChannel, kAnalysis, kMessage, kText, kText, kText, kEnd, kStart,
                                            kAssistant, kChannel, kFinal, kMessage, kText, kText}));
    EXPECT_EQ(reasoning, "www");
    EXPECT_EQ(content, "ww");
    EXPECT_EQ(phase.report().forced_end, ForcedEnd::Budget);
    EXPECT_EQ(phase.report().tokens, 3);
    for (size_t i = 0; i < 12; ++i) EXPECT_FALSE(grammar[i]) << i;  // headers, reasoning, the forced end
    EXPECT_TRUE(grammar[12]);
    // A lazy grammar (harmony's call headers) also watches the headers, never the reasoning or the forced end.
    const std::vector<bool> lazy_expected = {true,  true,  true,  false, false, false, false,
                                             false, false, false, false, false, true,  true};
    EXPECT_EQ(lazy_grammar, lazy_expected);
}

// The whole output path: a reasoning phase as the split, the harmony family reading calls.
OutputDelta run_output(const std::vector<Piece>& pieces) {
    OutputOptions options;
    ReasoningOptions reasoning;
    reasoning.harmony = kMarkers;
    options.reasoning = std::make_unique<ReasoningPhase>(reasoning);
    options.tool_calls = toolcalls::ToolCallFamily::Harmony;
    OutputProcessor processor(std::move(options));
    OutputDelta all;
    const auto add = [&all](OutputDelta delta) {
        all.content += delta.content;
        all.reasoning += delta.reasoning;
        for (auto& call : delta.calls) all.calls.push_back(std::move(call));
        all.unparsed_calls += delta.unparsed_calls;
    };
    for (const auto& [token, piece] : pieces) add(processor.push(OutputPiece{piece, token}));
    add(processor.finish());
    return all;
}

TEST(HarmonyOutput, ReasoningThenACallStreamedEqualsWholeAndReasoningNeverInContent) {
    const std::vector<Piece> pieces = {channel(),
                                       text("analysis"),
                                       message(),
                                       text("Need weather."),
                                       end(),
                                       start(),
                                       text("assistant"),
                                       channel(),
                                       text("commentary"),
                                       text(" to=functions.get_weather"),
                                       text(" "),
                                       constrain(),
                                       text("json"),
                                       message(),
                                       text("{\"city\":"),
                                       text(" \"Paris\"}")};
    const OutputDelta streamed = run_output(pieces);
    EXPECT_EQ(streamed.reasoning, "Need weather.");
    EXPECT_EQ(streamed.content, "");
    ASSERT_EQ(streamed.calls.size(), 1u);
    EXPECT_EQ(streamed.calls[0].name, "get_weather");
    EXPECT_EQ(streamed.calls[0].arguments, "{\"city\":\"Paris\"}");
    // The content side as a whole, read by the same family at once.
    const auto whole = toolcalls::parse_tool_calls(
        toolcalls::ToolCallFamily::Harmony,
        "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Paris\"}<|call|>");
    ASSERT_EQ(whole.calls.size(), 1u);
    EXPECT_EQ(whole.calls[0].name, streamed.calls[0].name);
    EXPECT_EQ(whole.calls[0].arguments, streamed.calls[0].arguments);
    EXPECT_EQ(whole.content, "");
}

TEST(HarmonyOutput, AnAnswerWithoutCallsIsContentAndBrokenArgumentsStayContent) {
    const OutputDelta answer = run_output(analysis_then_final());
    EXPECT_EQ(answer.reasoning, "The user greets.");
    EXPECT_EQ(answer.content, "Hello!");
    EXPECT_TRUE(answer.calls.empty());
    const OutputDelta broken = run_output({channel(), text("commentary to=functions.f"), message(), text("{oops")});
    EXPECT_TRUE(broken.calls.empty());
    EXPECT_EQ(broken.unparsed_calls, 1);
    EXPECT_NE(broken.content.find("{oops"), std::string::npos) << "nothing the model wrote is lost";
}

// Under constrain, the header grammar started by <|channel|> lets every channel through, holds a call to the
// declared functions and their schemas, and what it lets a model write is what the splitter and the family read.
TEST(HarmonyGrammar, HoldsCallsToDeclaredFunctionsAndSchemas) {
    const auto tools = toolcalls::DeclaredTools::from_request(nlohmann::ordered_json::parse(R"([
        {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
            "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false}}}])"));
    ASSERT_TRUE(tools.ok());
    auto grammar = toolcalls::build_harmony_header_grammar(*tools);
    ASSERT_TRUE(grammar.ok());
    const auto complete = [&](std::string_view text) {
        grammar::Matcher matcher(*grammar);
        return matcher.accept_bytes(text) && matcher.is_complete() && !matcher.can_continue();
    };
    const auto refused = [&](std::string_view text) {
        grammar::Matcher matcher(*grammar);
        return !matcher.accept_bytes(text);
    };
    EXPECT_TRUE(complete("<|channel|>analysis<|message|>"));
    EXPECT_TRUE(complete("<|channel|>final<|message|>"));
    EXPECT_TRUE(complete("<|channel|>commentary<|message|>"));
    const std::string call =
        R"(<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"})";
    EXPECT_TRUE(complete(call));
    EXPECT_TRUE(refused("<|channel|>commentary to=functions.send_email"));
    EXPECT_TRUE(refused(R"(<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"town")"));
    EXPECT_TRUE(refused("<|channel|>thinking"));
    // The constrained call, read by the splitter and the harmony family, is the declared call.
    const OutputDelta read = run_output({channel(), text("commentary to=functions.get_weather "), constrain(),
                                         text("json"), message(), text(R"({"city": "Paris"})")});
    ASSERT_EQ(read.calls.size(), 1u);
    EXPECT_EQ(read.calls[0].name, "get_weather");
    EXPECT_EQ(read.calls[0].arguments, R"({"city":"Paris"})");
}

}  // namespace harmony_test
}  // namespace
}  // namespace tempered
