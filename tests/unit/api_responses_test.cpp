// Shapes checked against the openai Python SDK (v3.57) types: chat/chat_completion.py (ChatCompletion,
// Choice, ChoiceLogprobs), chat/chat_completion_message.py, chat/chat_completion_chunk.py (ChoiceDelta,
// ChoiceDeltaToolCall), chat/chat_completion_token_logprob.py (ChatCompletionTokenLogprob, TopLogprob),
// chat/chat_completion_message_function_tool_call.py, completion.py, completion_choice.py (Logprobs),
// completion_usage.py (CompletionUsage, PromptTokensDetails).
#include <gtest/gtest.h>

#include <set>

#include "api/responses.h"
#include "api/sse.h"

namespace tempered::api {
namespace {
namespace api_responses_test {

using nlohmann::json;

std::set<std::string> keys(const json& object) {
    std::set<std::string> out;
    for (const auto& [key, value] : object.items()) out.insert(key);
    return out;
}

ResponseMeta meta() { return {"chatcmpl-abc", 1700000000, "smollm", "fp_tempered"}; }

TEST(Responses, IdsHavePrefixesAndAreUnique) {
    const std::string a = make_response_id("chatcmpl-");
    const std::string b = make_response_id("chatcmpl-");
    EXPECT_EQ(a.rfind("chatcmpl-", 0), 0u);
    EXPECT_EQ(a.size(), 9u + 24u);
    EXPECT_NE(a, b);
    EXPECT_EQ(make_completion_meta("m", "").id.rfind("cmpl-", 0), 0u);
    const ResponseMeta chat = make_chat_meta("m", "fp");
    EXPECT_EQ(chat.id.rfind("chatcmpl-", 0), 0u);
    EXPECT_GT(chat.created, 1700000000);
}

TEST(Responses, Usage) {
    const json usage = usage_json({10, 5, 8});
    EXPECT_EQ(keys(usage),
              (std::set<std::string>{"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details"}));
    EXPECT_EQ(usage["total_tokens"], 15);
    EXPECT_EQ(usage["prompt_tokens_details"]["cached_tokens"], 8);
}

TEST(Responses, ChatCompletion) {
    ChatChoice choice;
    choice.content = "Hello!";
    choice.finish_reason = FinishReason::Length;
    const json body = chat_completion_json(meta(), {choice}, {3, 2, 0});
    EXPECT_EQ(keys(body),
              (std::set<std::string>{"id", "object", "created", "model", "system_fingerprint", "choices", "usage"}));
    EXPECT_EQ(body["object"], "chat.completion");
    EXPECT_EQ(body["id"], "chatcmpl-abc");
    EXPECT_EQ(body["created"], 1700000000);
    EXPECT_EQ(body["model"], "smollm");
    EXPECT_EQ(body["system_fingerprint"], "fp_tempered");
    ASSERT_EQ(body["choices"].size(), 1u);
    const json& c = body["choices"][0];
    EXPECT_EQ(keys(c), (std::set<std::string>{"index", "message", "logprobs", "finish_reason"}));
    EXPECT_EQ(c["index"], 0);
    EXPECT_EQ(c["finish_reason"], "length");
    EXPECT_TRUE(c["logprobs"].is_null());
    EXPECT_EQ(c["message"]["role"], "assistant");
    EXPECT_EQ(c["message"]["content"], "Hello!");
    EXPECT_TRUE(c["message"]["refusal"].is_null());
    EXPECT_FALSE(c["message"].contains("tool_calls"));
    EXPECT_EQ(body["usage"]["total_tokens"], 5);

    ResponseMeta no_fingerprint = meta();
    no_fingerprint.system_fingerprint.clear();
    EXPECT_TRUE(chat_completion_json(no_fingerprint, {choice}, {})["system_fingerprint"].is_null());
}

TEST(Responses, ChatCompletionWithToolCallsAndReasoning) {
    ChatChoice choice;
    choice.content = std::nullopt;
    choice.reasoning_content = "thinking";
    choice.tool_calls.push_back({"call_1", "function", "get_weather", "{\"city\":\"Paris\"}"});
    choice.finish_reason = FinishReason::ToolCalls;
    const json c = chat_completion_json(meta(), {choice}, {})["choices"][0];
    EXPECT_EQ(c["finish_reason"], "tool_calls");
    EXPECT_TRUE(c["message"]["content"].is_null());
    EXPECT_EQ(c["message"]["reasoning_content"], "thinking");
    const json& call = c["message"]["tool_calls"][0];
    EXPECT_EQ(keys(call), (std::set<std::string>{"id", "type", "function"}));
    EXPECT_EQ(call["type"], "function");
    EXPECT_EQ(call["function"]["name"], "get_weather");
    EXPECT_EQ(call["function"]["arguments"], "{\"city\":\"Paris\"}");
}

TEST(Responses, ChatLogprobs) {
    TokenLogprob token{"Hi", -0.25, {72, 105}, {{"Hi", -0.25, {72, 105}}, {"Hey", -1.5, {72, 101, 121}}}};
    ChatChoice choice;
    choice.content = "Hi";
    choice.logprobs = std::vector<TokenLogprob>{token};
    const json logprobs = chat_completion_json(meta(), {choice}, {})["choices"][0]["logprobs"];
    EXPECT_EQ(keys(logprobs), (std::set<std::string>{"content", "refusal"}));
    const json& entry = logprobs["content"][0];
    EXPECT_EQ(keys(entry), (std::set<std::string>{"token", "logprob", "bytes", "top_logprobs"}));
    EXPECT_EQ(entry["token"], "Hi");
    EXPECT_EQ(entry["logprob"], -0.25);
    EXPECT_EQ(entry["bytes"], json::array({72, 105}));
    ASSERT_EQ(entry["top_logprobs"].size(), 2u);
    EXPECT_EQ(keys(entry["top_logprobs"][1]), (std::set<std::string>{"token", "logprob", "bytes"}));
    EXPECT_EQ(entry["top_logprobs"][1]["token"], "Hey");
    EXPECT_EQ(entry["top_logprobs"][1]["bytes"], json::array({72, 101, 121}));
}

TEST(Responses, ChatChunksFirstMiddleLastAndUsage) {
    ChatChunkChoice first;
    first.delta.include_role = true;
    first.delta.content = "";
    const json opening = chat_chunk_json(meta(), {first}, /*include_usage_field=*/true);
    EXPECT_EQ(opening["object"], "chat.completion.chunk");
    EXPECT_EQ(opening["id"], "chatcmpl-abc");
    EXPECT_TRUE(opening.contains("usage") && opening["usage"].is_null());
    const json& c0 = opening["choices"][0];
    EXPECT_EQ(keys(c0), (std::set<std::string>{"index", "delta", "logprobs", "finish_reason"}));
    EXPECT_EQ(c0["delta"]["role"], "assistant");
    EXPECT_EQ(c0["delta"]["content"], "");
    EXPECT_TRUE(c0["finish_reason"].is_null());

    ChatChunkChoice middle;
    middle.delta.content = "Hel";
    const json m = chat_chunk_json(meta(), {middle}, false);
    EXPECT_FALSE(m.contains("usage"));
    EXPECT_EQ(keys(m["choices"][0]["delta"]), std::set<std::string>{"content"});

    ChatChunkChoice last;
    last.finish_reason = FinishReason::Stop;
    const json l = chat_chunk_json(meta(), {last}, false);
    EXPECT_EQ(l["choices"][0]["delta"], json::object());
    EXPECT_EQ(l["choices"][0]["finish_reason"], "stop");

    const json usage = chat_usage_chunk_json(meta(), {4, 6, 2});
    EXPECT_EQ(usage["choices"], json::array());
    EXPECT_EQ(usage["usage"]["total_tokens"], 10);
    EXPECT_EQ(usage["usage"]["prompt_tokens_details"]["cached_tokens"], 2);
}

TEST(Responses, ChatChunkToolCallDeltas) {
    ChatChunkChoice opening;
    opening.delta.tool_calls.push_back({0, "call_1", "get_weather", ""});
    const json first = chat_chunk_json(meta(), {opening}, false)["choices"][0]["delta"]["tool_calls"][0];
    EXPECT_EQ(first["index"], 0);
    EXPECT_EQ(first["id"], "call_1");
    EXPECT_EQ(first["type"], "function");
    EXPECT_EQ(first["function"]["name"], "get_weather");
    EXPECT_EQ(first["function"]["arguments"], "");

    ChatChunkChoice more;
    more.delta.tool_calls.push_back({0, std::nullopt, std::nullopt, "{\"ci"});
    const json next = chat_chunk_json(meta(), {more}, false)["choices"][0]["delta"]["tool_calls"][0];
    EXPECT_EQ(keys(next), (std::set<std::string>{"index", "function"}));
    EXPECT_EQ(keys(next["function"]), std::set<std::string>{"arguments"});
}

TEST(Responses, TextCompletion) {
    ResponseMeta m{"cmpl-xyz", 1700000001, "smollm", ""};
    CompletionChoice choice;
    choice.index = 1;
    choice.text = " there";
    choice.finish_reason = FinishReason::Stop;
    const json body = text_completion_json(m, {choice}, {2, 1, 0});
    EXPECT_EQ(keys(body),
              (std::set<std::string>{"id", "object", "created", "model", "system_fingerprint", "choices", "usage"}));
    EXPECT_EQ(body["object"], "text_completion");
    EXPECT_EQ(body["id"], "cmpl-xyz");
    const json& c = body["choices"][0];
    EXPECT_EQ(keys(c), (std::set<std::string>{"index", "text", "logprobs", "finish_reason"}));
    EXPECT_EQ(c["index"], 1);
    EXPECT_EQ(c["text"], " there");
    EXPECT_EQ(c["finish_reason"], "stop");
    EXPECT_EQ(body["usage"]["completion_tokens"], 1);

    CompletionChoice partial;
    partial.text = " th";
    const json chunk = text_completion_chunk_json(m, {partial}, true);
    EXPECT_EQ(chunk["object"], "text_completion");
    EXPECT_TRUE(chunk["choices"][0]["finish_reason"].is_null());
    EXPECT_TRUE(chunk["usage"].is_null());
    const json usage = text_completion_usage_chunk_json(m, {2, 1, 0});
    EXPECT_EQ(usage["choices"], json::array());
    EXPECT_EQ(usage["usage"]["prompt_tokens"], 2);
}

TEST(Responses, CompletionLogprobsWithEcho) {
    CompletionLogprobs logprobs;
    logprobs.tokens = {"Hello", " world"};
    logprobs.token_logprobs = {std::nullopt, -0.5};
    using Alternatives = std::vector<std::pair<std::string, double>>;
    logprobs.top_logprobs = {std::nullopt, Alternatives{{" world", -0.5}, {" there", -1.0}}};
    logprobs.text_offset = {0, 5};
    CompletionChoice choice;
    choice.text = "Hello world";
    choice.finish_reason = FinishReason::Length;
    choice.logprobs = logprobs;
    const json lp = text_completion_json({"cmpl-1", 1, "m", ""}, {choice}, {})["choices"][0]["logprobs"];
    EXPECT_EQ(keys(lp), (std::set<std::string>{"tokens", "token_logprobs", "top_logprobs", "text_offset"}));
    EXPECT_EQ(lp["tokens"], json::array({"Hello", " world"}));
    EXPECT_TRUE(lp["token_logprobs"][0].is_null());
    EXPECT_EQ(lp["token_logprobs"][1], -0.5);
    EXPECT_TRUE(lp["top_logprobs"][0].is_null());
    EXPECT_EQ(lp["top_logprobs"][1][" there"], -1.0);
    EXPECT_EQ(lp["text_offset"], json::array({0, 5}));
}

TEST(Responses, StreamedChunkIsOneSseEvent) {
    ChatChunkChoice choice;
    choice.delta.content = "line\nbreak";
    const std::string event = sse_json(chat_chunk_json(meta(), {choice}, false));
    EXPECT_EQ(event.rfind("data: {", 0), 0u);
    EXPECT_EQ(event.find('\n'), event.size() - 2);  // no raw newline inside the payload
}

TEST(Responses, ReasoningUnderBothNamesWithItsBudgetAndUsage) {
    ChatChoice choice;
    choice.content = "Paris";
    choice.reasoning_content = "hm";
    choice.reasoning_budget = ReasoningBudget{8, 8, "budget"};
    json body = chat_completion_json(meta(), {choice}, {});
    add_reasoning_tokens(body["usage"], 11);
    const json& c = body["choices"][0];
    EXPECT_EQ(c["message"]["reasoning_content"], "hm");
    EXPECT_EQ(c["message"]["reasoning"], "hm");
    EXPECT_EQ(c["reasoning_budget"], (json{{"tokens", 8}, {"budget", 8}, {"forced_end", "budget"}}));
    EXPECT_EQ(body["usage"]["completion_tokens_details"], (json{{"reasoning_tokens", 11}}));

    choice.reasoning_budget = ReasoningBudget{3, std::nullopt, std::nullopt};
    const json unlimited = chat_completion_json(meta(), {choice}, {})["choices"][0]["reasoning_budget"];
    EXPECT_TRUE(unlimited["budget"].is_null());
    EXPECT_TRUE(unlimited["forced_end"].is_null());
    EXPECT_FALSE(chat_completion_json(meta(), {choice}, {})["usage"].contains("completion_tokens_details"));

    ChatChunkChoice chunk;
    chunk.delta.reasoning_content = "hm";
    chunk.reasoning_budget = ReasoningBudget{1, 2, "max_tokens"};
    const json streamed = chat_chunk_json(meta(), {chunk}, false)["choices"][0];
    EXPECT_EQ(streamed["delta"]["reasoning_content"], "hm");
    EXPECT_EQ(streamed["delta"]["reasoning"], "hm");
    EXPECT_FALSE(streamed["delta"].contains("content"));
    EXPECT_EQ(streamed["reasoning_budget"]["forced_end"], "max_tokens");
}

}  // namespace api_responses_test
}  // namespace
}  // namespace tempered::api
