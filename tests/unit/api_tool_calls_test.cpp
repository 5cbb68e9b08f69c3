// The API's tool-call fields: tool_choice needs tools (any value, as OpenAI), and tool_call_violations
// in whole responses and chunks (absent when there are none, so the plain shapes are unchanged).
#include <gtest/gtest.h>

#include "api/chat_request.h"
#include "api/responses.h"

namespace tempered::api {
namespace {
namespace api_tool_calls_test {

TEST(ApiToolCalls, AnyToolChoiceWithoutToolsIsRefusedNamingIt) {
    for (const std::string choice :
         {R"("auto")", R"("none")", R"("required")", R"({"type": "function", "function": {"name": "f"}})"}) {
        auto parsed =
            parse_chat_request(R"({"messages": [{"role": "user", "content": "hi"}], "tool_choice": )" + choice + "}");
        ASSERT_FALSE(parsed) << choice;
        EXPECT_EQ(parsed.error().param, "tool_choice") << choice;
        EXPECT_NE(parsed.error().message.find("tools"), std::string::npos) << parsed.error().message;
    }
    EXPECT_TRUE(parse_chat_request(R"({"messages": [{"role": "user", "content": "hi"}], "tool_choice": null})"));
}

TEST(ApiToolCalls, ViolationsRenderBesideTheMessageOnlyWhenThereAreAny) {
    const ResponseMeta meta{"chatcmpl-1", 1, "m", ""};
    ChatChoice choice;
    EXPECT_FALSE(chat_completion_json(meta, {choice}, {})["choices"][0].contains("tool_call_violations"));
    choice.content.reset();
    choice.tool_calls.push_back({"call_1", "function", "get_weather", R"({"city":"Oslo"})"});
    choice.tool_call_violations.push_back({1, "send_email", R"({"to":"bob"})", "no tool named 'send_email'"});
    choice.finish_reason = FinishReason::ToolCalls;
    const nlohmann::json body = chat_completion_json(meta, {choice}, {})["choices"][0];
    EXPECT_TRUE(body["message"]["content"].is_null());
    EXPECT_EQ(body["finish_reason"], "tool_calls");
    EXPECT_EQ(body["tool_call_violations"],
              nlohmann::json::parse(R"([{"index": 1, "name": "send_email", "arguments": "{\"to\":\"bob\"}",
                                         "reason": "no tool named 'send_email'"}])"));

    ChatChunkChoice chunk;
    EXPECT_FALSE(chat_chunk_json(meta, {chunk}, false)["choices"][0].contains("tool_call_violations"));
    chunk.tool_call_violations = choice.tool_call_violations;
    EXPECT_EQ(chat_chunk_json(meta, {chunk}, false)["choices"][0]["tool_call_violations"][0]["index"], 1);
}

}  // namespace api_tool_calls_test
}  // namespace
}  // namespace tempered::api
