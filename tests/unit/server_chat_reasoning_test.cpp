// Reasoning in chat responses, from the engine's deltas (reasoning_text beside text, the report on the
// finishing delta) to OpenAI's shapes: message.reasoning_content and .reasoning, streamed deltas that add up
// to the whole message, reasoning_budget per choice, usage's reasoning_tokens, tool calls read from the
// content only, and the reasoning and empty-content metrics.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "api/chat_request.h"
#include "engine_test_support.h"
#include "server/chat_response.h"
#include "server/chat_tool_calls.h"
#include "serving_metrics_test_support.h"

namespace tempered {
namespace {
namespace server_chat_reasoning_test {

const Tokenizer& tokenizer() {
    static const Tokenizer instance = testing::byte_tokenizer();
    return instance;
}

ChoiceDelta thinking(std::string text) {
    ChoiceDelta delta;
    delta.reasoning_text = std::move(text);
    return delta;
}

ChoiceDelta answering(std::string text) {
    ChoiceDelta delta;
    delta.text = std::move(text);
    return delta;
}

ReasoningReport budget_report() {
    ReasoningReport report;
    report.reasoned = true;
    report.tokens = 4;
    report.budget = 4;
    report.forced_end = ForcedEnd::Budget;
    report.reasoning_tokens = 6;
    return report;
}

// The deltas of one answer that reasoned, then answered, then finished.
std::vector<ChoiceDelta> reasoned_answer() {
    ChoiceDelta last = answering(" Paris.");
    last.finish = FinishReason::Length;
    last.reasoning = budget_report();
    return {thinking("Hmm, "), thinking("France.\n"), answering("\n\nIt is"), last};
}

using testing::series_value;

TEST(ChatReasoning, WholeMessageHasBothNamesTheBudgetAndUsage) {
    ServingMetrics metrics("m", "f16");
    ChatResponseBuilder builder(tokenizer(), api::make_chat_meta("m", ""), {.choices = 1});
    builder.count_answers(metrics);
    for (const ChoiceDelta& delta : reasoned_answer()) builder.on_delta(delta);
    const nlohmann::json body = builder.final_body({5, 10, 0});
    const nlohmann::json& choice = body["choices"][0];
    EXPECT_EQ(choice["message"]["reasoning_content"], "Hmm, France.\n");
    EXPECT_EQ(choice["message"]["reasoning"], "Hmm, France.\n");
    EXPECT_EQ(choice["message"]["content"], "\n\nIt is Paris.");
    EXPECT_EQ(choice["reasoning_budget"], (nlohmann::json{{"tokens", 4}, {"budget", 4}, {"forced_end", "budget"}}));
    EXPECT_EQ(body["usage"]["completion_tokens_details"]["reasoning_tokens"], 6);
    EXPECT_EQ(series_value(metrics, "tempered:reasoning_tokens_count"), 1);
    EXPECT_EQ(series_value(metrics, "tempered:reasoning_tokens_sum"), 4);
    EXPECT_EQ(series_value(metrics, "tempered:reasoning_forced_end_total{reason=\"budget\"}"), 1);
    EXPECT_EQ(series_value(metrics, "tempered:empty_content_total"), 0);
}

TEST(ChatReasoning, StreamedDeltasAddUpToTheWholeMessage) {
    ChatResponseBuilder builder(tokenizer(), api::make_chat_meta("m", ""),
                                {.choices = 1, .stream = true, .include_usage = true});
    std::string reasoning, reasoning_alias, content;
    nlohmann::json last;
    for (const ChoiceDelta& delta : reasoned_answer()) {
        const std::vector<nlohmann::json> chunks = builder.on_delta(delta);
        ASSERT_EQ(chunks.size(), 1u);
        const nlohmann::json& streamed = chunks[0]["choices"][0]["delta"];
        if (!delta.reasoning_text.empty()) {
            EXPECT_FALSE(streamed.contains("content")) << "a reasoning-only chunk";
        }
        reasoning += streamed.value("reasoning_content", "");
        reasoning_alias += streamed.value("reasoning", "");
        content += streamed.value("content", "");
        last = chunks[0]["choices"][0];
    }
    EXPECT_EQ(reasoning, "Hmm, France.\n");
    EXPECT_EQ(reasoning_alias, reasoning);
    EXPECT_EQ(content, "\n\nIt is Paris.");
    EXPECT_EQ(last["finish_reason"], "length");
    EXPECT_EQ(last["reasoning_budget"]["forced_end"], "budget");
    EXPECT_EQ(builder.usage_chunk({5, 10, 0})["usage"]["completion_tokens_details"]["reasoning_tokens"], 6);
}

TEST(ChatReasoning, AnswersWithoutReasoningHandlingLookAsBefore) {
    ChatResponseBuilder builder(tokenizer(), api::make_chat_meta("m", ""), {.choices = 1});
    ChoiceDelta only = answering("Paris.");
    only.finish = FinishReason::Stop;
    builder.on_delta(only);
    const nlohmann::json body = builder.final_body({5, 1, 0});
    EXPECT_FALSE(body["choices"][0]["message"].contains("reasoning_content"));
    EXPECT_FALSE(body["choices"][0].contains("reasoning_budget"));
    EXPECT_FALSE(body["usage"].contains("completion_tokens_details"));
}

// A model with a reasoning parser that did not reason: usage says 0 reasoning tokens, the choice no budget.
TEST(ChatReasoning, AReportOfNoReasoningGivesZeroReasoningTokensAndNoBudget) {
    ChatResponseBuilder builder(tokenizer(), api::make_chat_meta("m", ""), {.choices = 1});
    ChoiceDelta only = answering("Paris.");
    only.finish = FinishReason::Stop;
    only.reasoning = ReasoningReport{};
    builder.on_delta(only);
    const nlohmann::json body = builder.final_body({5, 1, 0});
    EXPECT_FALSE(body["choices"][0]["message"].contains("reasoning_content"));
    EXPECT_FALSE(body["choices"][0].contains("reasoning_budget"));
    EXPECT_EQ(body["usage"]["completion_tokens_details"]["reasoning_tokens"], 0);
}

TEST(ChatReasoning, ACallWrittenWhileReasoningIsNotACall) {
    auto request = api::parse_chat_request(R"({"messages": [{"role": "user", "content": "hi"}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]})");
    ASSERT_TRUE(request);
    auto setup = tool_call_setup(*request, {toolcalls::ToolCallFamily::Hermes, ToolCallValidation::Flag});
    ASSERT_TRUE(setup && *setup);
    ServingMetrics metrics("m", "f16");
    ChatResponseBuilder builder(tokenizer(), api::make_chat_meta("m", ""), {.choices = 1});
    builder.read_tool_calls(std::move(**setup), metrics);
    builder.count_answers(metrics);
    const std::string call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>";
    builder.on_delta(thinking(call));
    ChoiceDelta last;
    last.finish = FinishReason::Stop;
    last.reasoning = budget_report();
    builder.on_delta(last);
    const nlohmann::json choice = builder.final_body({})["choices"][0];
    EXPECT_EQ(choice["message"]["reasoning_content"], call);
    EXPECT_FALSE(choice["message"].contains("tool_calls"));
    EXPECT_EQ(choice["finish_reason"], "stop");
    EXPECT_EQ(series_value(metrics, "tempered:empty_content_total"), 1) << "nothing but reasoning came";
}

}  // namespace server_chat_reasoning_test
}  // namespace
}  // namespace tempered
