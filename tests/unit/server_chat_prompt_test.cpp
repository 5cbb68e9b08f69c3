// chat_template_inputs: a chat request as its model's template sees it.
#include <gtest/gtest.h>

#include "api/chat_request.h"
#include "chat/reasoning_history.h"
#include "server/chat_prompt.h"

namespace tempered {
namespace {
namespace server_chat_prompt_test {

api::ChatRequest parse(const std::string& body) {
    auto parsed = api::parse_chat_request(body);
    EXPECT_TRUE(parsed) << (parsed ? "" : parsed.error().message);
    return parsed ? std::move(parsed).value() : api::ChatRequest{};
}

// From the request body to the template's `tojson`: the client's key order all the way, as Python's
// json.loads + jinja2 would print it (not nlohmann::json's sorted order).
TEST(ChatPrompt, TemplateSeesToolsAndKwargsInTheClientsKeyOrder) {
    const api::ChatRequest request = parse(
        R"({"messages":[{"role":"user","content":"hi"}],)"
        R"("tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object",)"
        R"("properties":{"zip":{"type":"string"},"city":{"type":"string"}},"required":["zip"]},"description":"W"}}],)"
        R"("chat_template_kwargs":{"zeta":1,"alpha":2}})");
    const auto parsed = ChatTemplate::parse(
        "{{ tools | tojson }}\n{% for key in tools[0].function.parameters.properties %}{{ key }} {% endfor %}\n"
        "{{ zeta }}{{ alpha }}");
    ASSERT_TRUE(parsed.ok());
    const auto rendered = parsed->apply(chat_template_inputs(request));
    ASSERT_TRUE(rendered.ok()) << rendered.error().message;
    EXPECT_EQ(rendered.value(),
              R"([{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", )"
              R"("properties": {"zip": {"type": "string"}, "city": {"type": "string"}}, "required": ["zip"]}, )"
              R"("description": "W"}}])"
              "\nzip city 12");  // trim_blocks eats the newline after endfor
}

TEST(ChatPrompt, MessagesCarryRoleContentNameAndToolCalls) {
    const api::ChatRequest request = parse(
        R"({"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"name":"u"},)"
        R"({"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f",)"
        R"("arguments":"{\"y\":1,\"x\":2}"}}]},{"role":"tool","content":"3","tool_call_id":"c1"}]})");
    const ChatTemplateInputs inputs = chat_template_inputs(request);
    EXPECT_EQ(inputs.messages.dump(),
              R"([{"role":"user","content":"ab","name":"u"},)"
              R"({"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function",)"
              R"("function":{"name":"f","arguments":{"y":1,"x":2}}}]},)"
              R"({"role":"tool","content":"3","tool_call_id":"c1"}])");
    EXPECT_TRUE(inputs.tools.is_null());
    EXPECT_TRUE(inputs.extra_context.is_null());
}

TEST(ChatPrompt, PastReasoningReachesTheTemplateUnderTheNameItReads) {
    EXPECT_EQ(reasoning_keys("{% if message.reasoning_content %}<think>{{ message.reasoning_content }}"),
              std::vector<std::string>{"reasoning_content"});
    EXPECT_EQ(reasoning_keys("{{ message['thinking'] }}"), std::vector<std::string>{"thinking"});
    EXPECT_EQ(reasoning_keys("{{ m[\"reasoning\"] }}{{ m.reasoning_content }}"),
              (std::vector<std::string>{"reasoning_content", "reasoning"}));
    EXPECT_TRUE(reasoning_keys("{{ message.content }}").empty());

    const std::string source =
        "{% for m in messages %}{% if m.reasoning_content %}<think>{{ m.reasoning_content }}</think>{% endif %}"
        "{{ m.content }}|{% endfor %}";
    const auto parsed = ChatTemplate::parse(source);
    ASSERT_TRUE(parsed.ok());
    for (const char* field : {"reasoning_content", "reasoning"}) {
        const api::ChatRequest request = parse(std::string(R"({"messages":[{"role":"user","content":"q"},)") +
                                               R"({"role":"assistant","content":"a",")" + field + R"(":"because"}]})");
        EXPECT_EQ(parsed->apply(chat_template_inputs(request, reasoning_keys(source))).value(),
                  "q|<think>because</think>a|");
        EXPECT_EQ(parsed->apply(chat_template_inputs(request)).value(), "q|a|");  // a template that reads none
    }
    auto both = api::parse_chat_request(
        R"({"messages":[{"role":"assistant","content":"a","reasoning":"x","reasoning_content":"y"}]})");
    ASSERT_FALSE(both);
    EXPECT_EQ(both.error().param, "messages[0].reasoning");
}

}  // namespace server_chat_prompt_test
}  // namespace
}  // namespace tempered
