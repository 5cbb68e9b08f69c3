// The Responses and Messages bodies read as the chat body they amount to (api/responses_request.h,
// api/messages_request.h): items and blocks become messages in order, reasoning rides on the assistant turn
// after it, calls on the turn they belong to; hosted tools are left out with a warning; a result for no call,
// an unknown item or block type and wrong types are 400s naming the field.
#include <gtest/gtest.h>

#include "api/messages_request.h"
#include "api/responses_request.h"

namespace tempered::api {
namespace {
namespace api_agent_requests_test {

Json responses_chat(const std::string& body, const Json& conversation = Json::array()) {
    auto request = parse_responses_request(Json::parse(body));
    EXPECT_TRUE(request.ok()) << (request.ok() ? "" : request.error().message);
    auto chat = responses_chat_body(*request, conversation);
    EXPECT_TRUE(chat.ok()) << (chat.ok() ? "" : chat.error().message);
    return chat.ok() ? *chat : Json();
}

std::string responses_error(const std::string& body, const Json& conversation = Json::array()) {
    auto request = parse_responses_request(Json::parse(body));
    if (!request) return request.error().param;
    auto chat = responses_chat_body(*request, conversation);
    return chat ? "(accepted)" : chat.error().param;
}

TEST(ResponsesRequest, AStringInputAfterInstructionsAndTheSamplingFields) {
    const Json chat = responses_chat(
        R"({"model":"m","instructions":"Be brief.","input":"Hi","max_output_tokens":9,"temperature":0.2,
            "top_k":5,"store":false,"include":["reasoning.encrypted_content"],"reasoning":{"effort":"minimal"}})");
    EXPECT_EQ(chat["messages"], Json::parse(R"([{"role":"system","content":"Be brief."},
                                                {"role":"user","content":"Hi"}])"));
    EXPECT_EQ(chat["max_tokens"], 9);
    EXPECT_EQ(chat["temperature"], 0.2);
    EXPECT_EQ(chat["top_k"], 5);  // not a Responses field: passed on for chat's parser to check
    EXPECT_EQ(chat["reasoning_effort"], "low");
    EXPECT_FALSE(chat.contains("store"));
    EXPECT_FALSE(chat.contains("include"));
}

TEST(ResponsesRequest, ItemsBecomeOneAssistantTurnWithItsReasoningAndCalls) {
    const Json chat = responses_chat(R"({"input":[
        {"role":"user","content":[{"type":"input_text","text":"Weather?"}]},
        {"type":"reasoning","id":"rs_1","summary":[],"content":[{"type":"reasoning_text","text":"Use the tool."}]},
        {"type":"function_call","call_id":"call_a","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},
        {"type":"function_call","call_id":"call_b","name":"get_time","arguments":"{}"},
        {"type":"function_call_output","call_id":"call_a","output":"sunny"},
        {"type":"function_call_output","call_id":"call_b","output":[{"type":"input_text","text":"noon"}]}]})");
    const Json& messages = chat["messages"];
    ASSERT_EQ(messages.size(), 4u);
    EXPECT_EQ(messages[1]["role"], "assistant");
    EXPECT_EQ(messages[1]["reasoning_content"], "Use the tool.");
    ASSERT_EQ(messages[1]["tool_calls"].size(), 2u);
    EXPECT_EQ(messages[1]["tool_calls"][1]["function"]["name"], "get_time");
    EXPECT_EQ(messages[2], Json::parse(R"({"role":"tool","tool_call_id":"call_a","content":"sunny"})"));
    EXPECT_EQ(messages[3]["content"], "noon");
}

TEST(ResponsesRequest, TheStoredConversationComesFirst) {
    const Json stored = Json::parse(R"([{"type":"message","role":"user","content":"My name is Ada."},
        {"type":"message","id":"msg_1","status":"completed","role":"assistant",
         "content":[{"type":"output_text","text":"OK","annotations":[]}]}])");
    const Json chat = responses_chat(R"({"input":"And my name?","instructions":"Be kind."})", stored);
    ASSERT_EQ(chat["messages"].size(), 4u);
    EXPECT_EQ(chat["messages"][2]["content"], "OK");
    EXPECT_EQ(chat["messages"][3]["content"], "And my name?");
}

TEST(ResponsesRequest, HostedToolsAreLeftOutWithAWarning) {
    auto request = parse_responses_request(Json::parse(R"({"input":"x","tool_choice":"auto","tools":[
        {"type":"web_search"},{"type":"custom","name":"apply_patch"},
        {"type":"function","name":"shell","parameters":{"type":"object"}}]})"));
    ASSERT_TRUE(request.ok());
    ASSERT_EQ(request->warnings.size(), 2u);
    EXPECT_NE(request->warnings[0].find("web_search"), std::string::npos);
    const Json chat = *responses_chat_body(*request, Json::array());
    ASSERT_EQ(chat["tools"].size(), 1u);
    EXPECT_EQ(chat["tools"][0]["function"]["name"], "shell");
    // Only hosted tools, tool_choice auto (as Codex sends): no tools and no tool_choice for chat.
    const Json only_hosted = responses_chat(R"({"input":"x","tool_choice":"auto","tools":[{"type":"web_search"}]})");
    EXPECT_FALSE(only_hosted.contains("tools"));
    EXPECT_FALSE(only_hosted.contains("tool_choice"));
}

TEST(ResponsesRequest, ToolChoiceAndTextFormat) {
    const Json chat = responses_chat(R"({"input":"x",
        "tools":[{"type":"function","name":"a"},{"type":"function","name":"b"}],
        "tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"b"}]},
        "text":{"format":{"type":"json_schema","name":"p","schema":{"type":"object"},"strict":true}}})");
    ASSERT_EQ(chat["tools"].size(), 1u);
    EXPECT_EQ(chat["tools"][0]["function"]["name"], "b");
    EXPECT_EQ(chat["tool_choice"], "required");
    EXPECT_EQ(chat["response_format"], Json::parse(R"({"type":"json_schema",
        "json_schema":{"name":"p","schema":{"type":"object"},"strict":true}})"));
    const Json named = responses_chat(R"({"input":"x","tools":[{"type":"function","name":"a"}],
                                          "tool_choice":{"type":"function","name":"a"}})");
    EXPECT_EQ(named["tool_choice"]["function"]["name"], "a");
}

TEST(ResponsesRequest, BadInputNamesTheField) {
    EXPECT_EQ(responses_error(R"({})"), "input");
    EXPECT_EQ(responses_error(R"({"input":[{"type":7}]})"), "input[0].type");
    EXPECT_EQ(responses_error(R"({"input":[{"type":"item_reference","id":"x"}]})"), "input[0].type");
    EXPECT_EQ(responses_error(R"({"input":[{"type":"function_call_output","call_id":"c","output":"x"}]})"),
              "input[0].call_id");
    EXPECT_EQ(responses_error(R"({"input":[{"role":"user","content":[{"type":5}]}]})"), "input[0].content[0].type");
    EXPECT_EQ(responses_error(R"({"input":"x","text":{"format":{"type":"json_schema","name":3}}})"),
              "text.format.name");
    EXPECT_EQ(responses_error(R"({"input":"x","tool_choice":{"type":"mcp"},"tools":[{"type":"function","name":"a"}]})"),
              "tool_choice");
    EXPECT_EQ(responses_error(R"({"input":"x","include":["message.output_text.logprobs"]})"), "include[0]");
    EXPECT_EQ(responses_error(R"({"input":"x","conversation":"conv_1"})"), "conversation");
}

TEST(ResponsesRequest, ChatErrorsSpeakThisApisNames) {
    ApiError error = invalid_request("'max_tokens' must be at least 1", "max_tokens");
    error = in_responses_terms(error);
    EXPECT_EQ(error.param, "max_output_tokens");
    EXPECT_EQ(error.message, "'max_output_tokens' must be at least 1");
    EXPECT_EQ(in_responses_terms(invalid_request("bad", "response_format.json_schema.schema")).param,
              "text.format.schema");
}

Json messages_chat(const std::string& body, bool count_only = false) {
    auto request = parse_messages_request(Json::parse(body), count_only);
    EXPECT_TRUE(request.ok()) << (request.ok() ? "" : request.error().message);
    return request.ok() ? request->chat_body : Json();
}

std::string messages_error(const std::string& body) {
    auto request = parse_messages_request(Json::parse(body), false);
    return request ? "(accepted)" : request.error().param;
}

TEST(MessagesRequest, BlocksBecomeChatMessages) {
    const Json chat = messages_chat(R"({"model":"m","max_tokens":20,"stop_sequences":["END"],
        "system":[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}],
        "thinking":{"type":"enabled","budget_tokens":12},"metadata":{"user_id":"u"},
        "messages":[
          {"role":"user","content":"Weather?"},
          {"role":"assistant","content":[{"type":"thinking","thinking":"Tool.","signature":"s"},
                                         {"type":"text","text":"Checking."},
                                         {"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},
          {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"sunny"}]},
                                    {"type":"text","text":"And so?"}]}]})");
    EXPECT_EQ(chat["max_tokens"], 20);
    EXPECT_EQ(chat["stop"], Json::parse(R"(["END"])"));
    EXPECT_EQ(chat["thinking_token_budget"], 12);
    EXPECT_FALSE(chat.contains("metadata"));
    const Json& messages = chat["messages"];
    ASSERT_EQ(messages.size(), 5u);
    EXPECT_EQ(messages[0], Json::parse(R"({"role":"system","content":"Be brief."})"));
    EXPECT_EQ(messages[2]["reasoning_content"], "Tool.");
    EXPECT_EQ(messages[2]["content"], "Checking.");
    EXPECT_EQ(messages[2]["tool_calls"][0]["function"]["arguments"], R"({"city":"Paris"})");
    EXPECT_EQ(messages[3], Json::parse(R"({"role":"tool","tool_call_id":"toolu_1","content":"sunny"})"));
    EXPECT_EQ(messages[4], Json::parse(R"({"role":"user","content":"And so?"})"));
}

TEST(MessagesRequest, ToolsAndToolChoice) {
    const Json chat = messages_chat(R"({"max_tokens":5,"messages":[{"role":"user","content":"x"}],
        "tools":[{"name":"a","description":"A.","input_schema":{"type":"object"}},
                 {"type":"web_search_20250305","name":"web_search"}],
        "tool_choice":{"type":"tool","name":"a","disable_parallel_tool_use":true}})");
    ASSERT_EQ(chat["tools"].size(), 1u);
    EXPECT_EQ(chat["tools"][0]["function"].dump(), R"({"name":"a","description":"A.","parameters":{"type":"object"}})");
    EXPECT_EQ(chat["tool_choice"]["function"]["name"], "a");
    EXPECT_EQ(chat["parallel_tool_calls"], false);
    EXPECT_EQ(messages_chat(R"({"max_tokens":5,"messages":[],"tools":[{"name":"a","input_schema":{}}],
                                "tool_choice":{"type":"any"}})")["tool_choice"],
              "required");
}

TEST(MessagesRequest, CountTokensNeedsNoMaxTokens) {
    const Json chat = messages_chat(R"({"messages":[{"role":"user","content":"x"}],"stream":true})", true);
    EXPECT_FALSE(chat.contains("max_tokens"));
    EXPECT_FALSE(chat.contains("stream"));
}

TEST(MessagesRequest, BadInputNamesTheField) {
    EXPECT_EQ(messages_error(R"({"messages":[]})"), "max_tokens");
    EXPECT_EQ(messages_error(R"({"max_tokens":1})"), "messages");
    EXPECT_EQ(messages_error(R"({"max_tokens":1,"messages":[{"role":"user","content":[{"type":"audio"}]}]})"),
              "messages[0].content[0].type");
    EXPECT_EQ(messages_error(R"({"max_tokens":1,"messages":[{"role":"user","content":[
                                 {"type":"tool_result","tool_use_id":"nope"}]}]})"),
              "messages[0].content[0].tool_use_id");
    EXPECT_EQ(messages_error(R"({"max_tokens":1,"messages":[{"role":"assistant","content":[
                                 {"type":"tool_use","id":"t","name":"a","input":"x"}]}]})"),
              "messages[0].content[0].input");
    EXPECT_EQ(messages_error(R"({"max_tokens":1,"messages":[],"system":[{"type":"image"}]})"), "system[0].type");
    EXPECT_EQ(messages_error(R"({"max_tokens":1,"messages":[],"thinking":{"type":"enabled","budget_tokens":-1}})"),
              "thinking.budget_tokens");
    EXPECT_EQ(messages_error(R"({"max_tokens":1,"messages":[],"tool_choice":{"type":"any"}})"), "tool_choice");
    EXPECT_EQ(messages_error(R"({"max_tokens":1,"messages":[],"output_config":{"format":{"type":"xml"}}})"),
              "output_config.format.type");
}

}  // namespace api_agent_requests_test
}  // namespace
}  // namespace tempered::api
