// apply_chat_template: the variables a template sees, and how failures come back.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "chat/chat_template.h"

namespace tempered {
namespace {
namespace chat_template_test {

// SmolLM2-135M-Instruct's template, as stored in the model file.
constexpr std::string_view kSmolLM2 =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\n"
    "You are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' "
    "+ message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt "
    "%}{{ '<|im_start|>assistant\\n' }}{% endif %}";

TEST(ChatTemplate, RendersOpenAIMessages) {
    ChatTemplateInputs inputs;
    inputs.messages = nlohmann::ordered_json::parse(R"([{"role": "user", "content": "Hi"}])");
    const auto result = apply_chat_template(kSmolLM2, inputs);
    ASSERT_TRUE(result.ok()) << result.error().message;
    EXPECT_EQ(result.value(),
              "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
              "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    inputs.add_generation_prompt = false;
    EXPECT_EQ(apply_chat_template(kSmolLM2, inputs).value().find("<|im_start|>assistant"), std::string::npos);
}

TEST(ChatTemplate, AcceptsPlainJsonMessages) {
    ChatTemplateInputs inputs;
    inputs.messages =
        nlohmann::json::parse(R"([{"role": "system", "content": "S"}, {"role": "user", "content": "U"}])");
    const auto result = apply_chat_template(kSmolLM2, inputs);
    ASSERT_TRUE(result.ok()) << result.error().message;
    EXPECT_EQ(result.value(),
              "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplate, PassesTokensToolsAndExtraContext) {
    ChatTemplateInputs inputs;
    inputs.bos_token = "<s>";
    inputs.eos_token = "</s>";
    inputs.extra_context = {{"enable_thinking", false}, {"bos_token", "<override>"}};
    const std::string_view source =
        "{{ bos_token }}|{{ eos_token }}|{{ tools is none }}|{{ documents is none }}|{{ enable_thinking }}|"
        "{{ add_generation_prompt }}";
    EXPECT_EQ(apply_chat_template(source, inputs).value(), "<override>|</s>|True|True|False|True");
    inputs.tools =
        nlohmann::ordered_json::parse(R"([{"type": "function", "function": {"name": "f", "description": "d"}}])");
    EXPECT_EQ(apply_chat_template("{{ tools|tojson }}", inputs).value(),
              R"([{"type": "function", "function": {"name": "f", "description": "d"}}])");
}

TEST(ChatTemplate, StrftimeNowReadsTheInjectedClock) {
    ChatTemplateInputs inputs;
    inputs.now = [] { return std::chrono::system_clock::from_time_t(1741953600); };  // 2025-03-14 12:00 UTC
    EXPECT_EQ(apply_chat_template("{{ strftime_now('%d %b %Y') }}", inputs).value(), "14 Mar 2025");
}

TEST(ChatTemplate, FailuresComeBackAsErrors) {
    ChatTemplateInputs inputs;
    inputs.messages =
        nlohmann::ordered_json::parse(R"([{"role": "user", "content": [{"type": "text", "text": "x"}]}])");
    const auto concat = apply_chat_template(kSmolLM2, inputs);  // str + list, as in Python
    ASSERT_FALSE(concat.ok());
    EXPECT_NE(concat.error().message.find("can only concatenate str"), std::string::npos) << concat.error().message;

    const auto raised = apply_chat_template("\n{{ raise_exception('Only user and assistant roles') }}", inputs);
    ASSERT_FALSE(raised.ok());
    EXPECT_EQ(raised.error().message, "template error at line 2: Only user and assistant roles");

    inputs.messages = nlohmann::ordered_json::object();
    EXPECT_FALSE(apply_chat_template(kSmolLM2, inputs).ok());
    inputs.messages = nlohmann::ordered_json::array();
    inputs.tools = "not a list";
    EXPECT_FALSE(apply_chat_template(kSmolLM2, inputs).ok());
    inputs.tools = nullptr;
    EXPECT_FALSE(apply_chat_template("{% if %}", inputs).ok());
}

// The server parses its model's template once and applies it to every request, from many threads: the
// parsed program stands alone (its source may be gone) and each application equals a fresh render.
TEST(ChatTemplate, ParsedOnceAppliedToManyRequestsOnManyThreads) {
    auto source = std::make_unique<std::string>(kSmolLM2);
    const auto parsed = ChatTemplate::parse(*source);
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    source->assign("{{ 'the source is gone' }}");
    source.reset();

    auto inputs_for = [](int request) {
        ChatTemplateInputs inputs;
        inputs.messages = nlohmann::ordered_json::array(
            {{{"role", "system"}, {"content", "S" + std::to_string(request)}}, {{"role", "user"}, {"content", "Q"}}});
        return inputs;
    };
    std::vector<std::thread> threads;
    std::vector<int> mismatches(4, 0);
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            for (int request = t; request < 200; request += 4) {
                const ChatTemplateInputs inputs = inputs_for(request);
                const auto applied = parsed->apply(inputs);
                if (!applied.ok() || applied.value() != apply_chat_template(kSmolLM2, inputs).value()) ++mismatches[t];
            }
        });
    }
    for (auto& thread : threads) thread.join();
    EXPECT_EQ(mismatches, std::vector<int>(4, 0));
    EXPECT_EQ(parsed->apply(inputs_for(7)).value(),
              "<|im_start|>system\nS7<|im_end|>\n<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplate, SyntaxErrorsComeBackFromParse) {
    const auto parsed = ChatTemplate::parse("line 1\n{% if %}");
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.error().message.rfind("template error at line 2", 0), 0u) << parsed.error().message;
}

// Tools reach the template in the order they were given: tojson prints them as json.dumps would.
TEST(ChatTemplate, ToolsKeepTheirKeyOrderThroughTojson) {
    const auto parsed =
        ChatTemplate::parse("{{ tools | tojson }}|{% for key in tools[0].function %}{{ key }},{% endfor %}");
    ASSERT_TRUE(parsed.ok());
    ChatTemplateInputs inputs;
    inputs.tools = nlohmann::ordered_json::parse(
        R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}, "description": "d"}}])");
    EXPECT_EQ(
        parsed->apply(inputs).value(),
        R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}, "description": "d"}}])"
        "|name,parameters,description,");
}

}  // namespace chat_template_test
}  // namespace
}  // namespace tempered
