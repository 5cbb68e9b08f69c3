// apply_chat_template: the variables a template sees, and how failures come back.
#include <gtest/gtest.h>

#include "chat/chat_template.h"

namespace tempered {
namespace {

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
    inputs.messages = nlohmann::json::parse(R"([{"role": "system", "content": "S"}, {"role": "user", "content": "U"}])");
    const auto result = apply_chat_template(kSmolLM2, inputs);
    ASSERT_TRUE(result.ok()) << result.error().message;
    EXPECT_EQ(result.value(), "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n");
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
    inputs.tools = nlohmann::ordered_json::parse(R"([{"type": "function", "function": {"name": "f", "description": "d"}}])");
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
    inputs.messages = nlohmann::ordered_json::parse(R"([{"role": "user", "content": [{"type": "text", "text": "x"}]}])");
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

}  // namespace
}  // namespace tempered
