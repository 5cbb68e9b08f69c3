// Tool calls against real chat templates (tests/fixtures/chat_templates): the parser family each
// template's markers choose, and a tool-use history rendered the way Qwen2.5's template expects it, with
// the assistant's call arguments as an object (a string would be printed double-encoded by `tojson`).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "api/chat_request.h"
#include "server/chat_prompt.h"
#include "toolcalls/tool_call_parser.h"

namespace tempered {
namespace {
namespace server_tool_call_templates_test {

using toolcalls::ToolCallFamily;

std::string fixture_template(const std::string& name) {
    const auto path = std::filesystem::path(TEMPERED_SOURCE_DIR) / "tests/fixtures/chat_templates/templates" / name;
    std::ifstream in(path, std::ios::binary);
    EXPECT_TRUE(in) << path;
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

TEST(ToolCallTemplates, FamilyChosenFromEachTemplatesMarkers) {
    const std::vector<std::pair<std::string, std::optional<ToolCallFamily>>> cases = {
        {"Qwen-Qwen2.5-7B-Instruct.jinja", ToolCallFamily::Hermes},
        {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", ToolCallFamily::Hermes},
        {"meta-llama-Llama-3.1-8B-Instruct.jinja", ToolCallFamily::Llama3Json},
        {"meta-llama-Llama-3.2-3B-Instruct.jinja", ToolCallFamily::Llama3Json},
        {"meta-llama-Llama-3.3-70B-Instruct.jinja", ToolCallFamily::Llama3Json},
        {"mistralai-Mistral-Nemo-Instruct-2407.jinja", ToolCallFamily::Mistral},
        {"HuggingFaceTB-SmolLM2-135M-Instruct.jinja", std::nullopt},
    };
    for (const auto& [name, family] : cases)
        EXPECT_EQ(toolcalls::detect_family(fixture_template(name)), family) << name;
}

TEST(ToolCallTemplates, QwenRendersCallHistoryWithObjectArgumentsAndToolResponses) {
    auto request = api::parse_chat_request(R"({"messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 21 C"}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]})");
    ASSERT_TRUE(request);
    auto chat_template = ChatTemplate::parse(fixture_template("Qwen-Qwen2.5-7B-Instruct.jinja"));
    ASSERT_TRUE(chat_template);
    auto rendered = chat_template->apply(chat_template_inputs(*request));
    ASSERT_TRUE(rendered) << rendered.error().message;
    EXPECT_NE(rendered->find("<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                             "{\"city\": \"Paris\"}}\n</tool_call><|im_end|>"),
              std::string::npos)
        << *rendered;
    EXPECT_NE(rendered->find("<|im_start|>user\n<tool_response>\nsunny, 21 C\n</tool_response><|im_end|>"),
              std::string::npos)
        << *rendered;
    EXPECT_NE(rendered->find("\"name\": \"get_weather\""), std::string::npos);  // the tools in the system turn
}

}  // namespace server_tool_call_templates_test
}  // namespace
}  // namespace tempered
