// The output processor (src/output) fed as another engine's stream would feed it: plain text in pieces,
// mostly without token ids. The engine's own use of it is held by the engine and e2e tests.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "output/output_processor.h"
#include "output/text_reasoning_split.h"
#include "output/token_reasoning_split.h"
#include "toolcalls/tool_call_parser.h"

namespace tempered {
namespace {
namespace output_processor_test {

struct Collected {
    std::string reasoning;
    std::string content;
    std::vector<toolcalls::ParsedToolCall> calls;
    int unparsed_calls = 0;
    bool stopped = false;
    int stopped_at_piece = -1;

    void add(OutputDelta delta) {
        reasoning += delta.reasoning;
        content += delta.content;
        for (auto& call : delta.calls) calls.push_back(std::move(call));
        unparsed_calls += delta.unparsed_calls;
    }
};

// Pushes `pieces` (text only, no ids) until a stop string ends the output, then finishes it if none did.
Collected run(OutputProcessor& processor, const std::vector<std::string>& pieces) {
    Collected out;
    for (size_t i = 0; i < pieces.size() && !out.stopped; ++i) {
        OutputDelta delta = processor.push({pieces[i], std::nullopt});
        if (delta.stopped) out.stopped_at_piece = static_cast<int>(i);
        out.stopped = delta.stopped;
        out.add(std::move(delta));
    }
    if (!out.stopped) out.add(processor.finish());
    return out;
}

OutputProcessor text_processor(bool prompt_opened, std::vector<std::string> stop = {}) {
    return OutputProcessor(
        OutputOptions{std::move(stop), std::make_unique<TextReasoningSplit>(prompt_opened), {}, std::nullopt});
}

TEST(TextReasoningSplit, MarkersSplitAcrossPiecesStillSwitchSides) {
    OutputProcessor processor = text_processor(/*prompt_opened=*/false);
    const Collected out = run(processor, {"<thi", "nk>Let me th", "ink.</th", "ink>Paris", "."});
    EXPECT_EQ(out.reasoning, "Let me think.");
    EXPECT_EQ(out.content, "Paris.");
}

TEST(TextReasoningSplit, EveryWayOfCuttingTheTextGivesTheSameSplit) {
    const std::string text = "<think>I think </thin about <think> and </think>The answer: </think> 42.";
    OutputProcessor whole = text_processor(false);
    const Collected expected = run(whole, {text});
    EXPECT_EQ(expected.reasoning, "I think </thin about <think> and ");
    EXPECT_EQ(expected.content, "The answer: </think> 42.");
    std::mt19937 rng(27);
    for (int trial = 0; trial < 200; ++trial) {
        std::vector<std::string> pieces;
        for (size_t at = 0; at < text.size();) {
            const size_t length = std::uniform_int_distribution<size_t>(0, 9)(rng);
            pieces.push_back(text.substr(at, length));
            at += length;
        }
        OutputProcessor processor = text_processor(false);
        const Collected out = run(processor, pieces);
        EXPECT_EQ(out.reasoning, expected.reasoning);
        EXPECT_EQ(out.content, expected.content);
    }
}

TEST(TextReasoningSplit, APromptThatOpenedReasoningStartsInsideAndAHeldTailComesOutAtTheEnd) {
    OutputProcessor processor = text_processor(/*prompt_opened=*/true);
    const Collected out = run(processor, {"still thinking </th"});
    EXPECT_EQ(out.reasoning, "still thinking </th");
    EXPECT_EQ(out.content, "");
    EXPECT_TRUE(processor.in_reasoning());
}

TEST(OutputProcessor, AStopStringAcrossPiecesOfPlainTextIsNeverEmitted) {
    OutputProcessor processor(OutputOptions{{"STOP"}, nullptr, {}, std::nullopt});
    const Collected out = run(processor, {"Hello S", "T", "OP there"});
    EXPECT_TRUE(out.stopped);
    EXPECT_EQ(out.stopped_at_piece, 2);
    EXPECT_EQ(out.content, "Hello ");
}

TEST(OutputProcessor, StopStringsApplyToContentOnly) {
    OutputProcessor processor = text_processor(/*prompt_opened=*/true, {"STOP"});
    const Collected out = run(processor, {"should I STOP", "? no.</think>", "Go on, then ST", "OP, then more"});
    EXPECT_EQ(out.reasoning, "should I STOP? no.");
    EXPECT_EQ(out.content, "Go on, then ");
    EXPECT_EQ(out.stopped_at_piece, 3);
}

// The text in pieces of `size` bytes.
std::vector<std::string> cut(const std::string& text, size_t size) {
    std::vector<std::string> pieces;
    for (size_t at = 0; at < text.size(); at += size) pieces.push_back(text.substr(at, size));
    return pieces;
}

OutputProcessor hermes_processor(std::vector<std::string> stop = {}, std::unique_ptr<ReasoningSplit> split = nullptr) {
    return OutputProcessor(OutputOptions{std::move(stop), std::move(split), {}, toolcalls::ToolCallFamily::Hermes});
}

const std::string kCall =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";

// However the stream is cut, the content and calls are the whole-text parse's (toolcalls/tool_call_parser.h).
TEST(OutputProcessor, ToolCallsReadFromContentAgreeWithTheWholeTextParseHoweverTheTextIsCut) {
    const std::string text = "Checking.\n" + kCall + "\n<tool_call>\n{\"name\": oops}\n</tool_call>";
    const toolcalls::ParsedText whole = toolcalls::parse_tool_calls(toolcalls::ToolCallFamily::Hermes, text);
    ASSERT_EQ(whole.calls.size(), 1u);
    ASSERT_EQ(whole.unparsed, 1);
    for (size_t size : {1u, 3u, 7u, 1000u}) {
        OutputProcessor processor = hermes_processor();
        const Collected out = run(processor, cut(text, size));
        EXPECT_EQ(out.content, whole.content) << size;
        ASSERT_EQ(out.calls.size(), 1u) << size;
        EXPECT_EQ(out.calls[0].name, "get_weather");
        EXPECT_EQ(out.calls[0].arguments, R"({"city":"Paris"})");
        EXPECT_EQ(out.unparsed_calls, 1) << size;
    }
}

// A call the model writes while it reasons is reasoning text, not a call; the one in the answer is a call.
TEST(OutputProcessor, ACallWrittenWhileReasoningIsNotACall) {
    OutputProcessor processor = hermes_processor({}, std::make_unique<TextReasoningSplit>(false));
    const Collected out = run(processor, cut("<think>maybe " + kCall + "</think>" + kCall, 5));
    EXPECT_EQ(out.reasoning, "maybe " + kCall);
    EXPECT_EQ(out.content, "");
    EXPECT_EQ(out.calls.size(), 1u);
}

// A stop string ends the output before a call that follows it is read, and a call cut off by the stop string
// goes back to the content as the model wrote it (the parser lets go of what it held).
TEST(OutputProcessor, AStopStringEndsTheCallsToo) {
    OutputProcessor after = hermes_processor({"STOP"});
    Collected out = run(after, cut("Done STOP" + kCall, 4));
    EXPECT_TRUE(out.stopped);
    EXPECT_EQ(out.content, "Done ");
    EXPECT_TRUE(out.calls.empty());

    OutputProcessor inside = hermes_processor({"Paris"});
    out = run(inside, cut(kCall, 6));
    EXPECT_TRUE(out.stopped);
    EXPECT_TRUE(out.calls.empty());
    EXPECT_EQ(out.content, kCall.substr(0, kCall.find("Paris")));
}

TEST(OutputProcessor, HeldBackTextComesOutWhenTheOutputEnds) {
    OutputProcessor processor(OutputOptions{{"STOP"}, nullptr, {}, std::nullopt});
    EXPECT_EQ(processor.push({"abc ST", std::nullopt}).content, "abc ");
    EXPECT_EQ(processor.finish("!").content, "ST!");
}

// The loop detector counts tokens: a stream with ids is watched, the same text without them is not (text
// alone has no token boundaries; a driver without ids tokenizes first if it wants loops seen).
TEST(OutputProcessor, LoopsAreSeenOnTokenIdsOnly) {
    RepetitionDetectionParams loops;
    loops.max_pattern_size = 8;
    loops.min_pattern_size = 1;
    loops.min_count = 3;
    OutputProcessor with_ids(OutputOptions{{}, nullptr, loops, std::nullopt});
    OutputProcessor text_only(OutputOptions{{}, nullptr, loops, std::nullopt});
    const std::vector<std::string> words = {"la", " Femme", ","};
    std::optional<LoopSeen> seen;
    int seen_at = -1;
    for (int i = 0; i < 12; ++i) {
        const std::string& word = words[static_cast<size_t>(i) % words.size()];
        OutputDelta delta = with_ids.push({word, static_cast<int32_t>(i % 3) + 100});
        if (delta.loop && !seen) {
            seen = delta.loop;
            seen_at = i;
        }
        EXPECT_FALSE(text_only.push({word, std::nullopt}).loop);
    }
    ASSERT_TRUE(seen);
    EXPECT_EQ(seen_at, 8);  // the 3rd copy of the 3-token block completes at the 9th piece
    EXPECT_EQ(seen->loop.detected_at_token, 8);
    EXPECT_EQ(seen->loop.period, 3);
    EXPECT_EQ(seen->loop.repeats, 3);
    EXPECT_FALSE(seen->in_reasoning);
    EXPECT_EQ(with_ids.loop()->repeats, 4);  // 12 pieces: the loop went on to its 4th copy
}

TEST(OutputProcessor, ALoopInsideReasoningSaysSo) {
    RepetitionDetectionParams loops;
    loops.max_pattern_size = 4;
    loops.min_pattern_size = 1;
    loops.min_count = 4;
    OutputProcessor processor(OutputOptions{{}, std::make_unique<TextReasoningSplit>(true), loops, std::nullopt});
    std::optional<LoopSeen> seen;
    for (int i = 0; i < 4 && !seen; ++i) seen = processor.push({"hm ", 7}).loop;
    ASSERT_TRUE(seen);
    EXPECT_TRUE(seen->in_reasoning);
    EXPECT_EQ(seen->loop.period, 1);
}

// With ids of our vocabulary the split is on the marker tokens, as the engine's; a </think> spelled out of
// ordinary pieces is text there, where the text split, which cannot tell, takes it for the marker.
TEST(TokenReasoningSplit, SplitsOnMarkerIdsAndLeavesASpelledOutMarkerAsText) {
    const reasoning::ThinkTokens markers{3, 4};
    OutputProcessor processor(
        OutputOptions{{}, std::make_unique<TokenReasoningSplit>(markers, false), {}, std::nullopt});
    std::string reasoning, content;
    const std::vector<std::pair<int32_t, std::string>> stream = {{3, "<think>"}, {8, "hm "},      {9, "</"},
                                                                 {10, "think>"}, {4, "</think>"}, {6, "Paris"}};
    for (const auto& [token, text] : stream) {
        OutputDelta delta = processor.push({text, token});
        reasoning += delta.reasoning;
        content += delta.content;
    }
    EXPECT_EQ(reasoning, "hm </think>");
    EXPECT_EQ(content, "Paris");
}

}  // namespace output_processor_test
}  // namespace
}  // namespace tempered
