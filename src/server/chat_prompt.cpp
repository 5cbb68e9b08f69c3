#include "server/chat_prompt.h"

#include <algorithm>

namespace tempered {
namespace {

nlohmann::ordered_json template_tool_calls(const std::vector<api::ToolCall>& calls) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto& call : calls) {
        // Templates index into the arguments: an object when they parse, else the text as written.
        nlohmann::ordered_json arguments = nlohmann::ordered_json::parse(call.arguments, nullptr, false);
        out.push_back(
            {{"id", call.id},
             {"type", call.type},
             {"function",
              {{"name", call.name},
               {"arguments", arguments.is_discarded() ? nlohmann::ordered_json(call.arguments) : arguments}}}});
    }
    return out;
}

// gpt-oss's template (the one that reads `thinking`) renders what an assistant said before a call as one
// analysis message, from `thinking` or from `content`, refuses a message with both, and tests the content with
// `in`, which fails on OpenAI's null content of a call turn. For such a template a call turn's content is text
// ("" for null), and when it has both, the content (a preamble the model wrote on the commentary channel)
// follows the reasoning in `thinking` after a blank line.
void one_analysis_for_a_call_turn(nlohmann::ordered_json& entry, const std::vector<std::string>& reasoning_keys) {
    if (std::find(reasoning_keys.begin(), reasoning_keys.end(), "thinking") == reasoning_keys.end()) return;
    if (!entry["content"].is_string()) entry["content"] = "";
    const std::string content = entry["content"].get<std::string>();
    if (!entry.contains("thinking") || content.empty()) return;
    entry["thinking"] = entry["thinking"].get<std::string>() + "\n\n" + content;
    entry["content"] = "";
}

nlohmann::ordered_json template_messages(const api::ChatRequest& request,
                                         const std::vector<std::string>& reasoning_keys) {
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    for (const auto& message : request.messages) {
        nlohmann::ordered_json entry;
        entry["role"] = std::string(api::role_name(message.role));
        if (message.content_kind == api::ContentKind::None)
            entry["content"] = nullptr;
        else
            entry["content"] = message.content;
        if (!message.name.empty()) entry["name"] = message.name;
        if (!message.tool_call_id.empty()) entry["tool_call_id"] = message.tool_call_id;
        if (!message.tool_calls.empty()) entry["tool_calls"] = template_tool_calls(message.tool_calls);
        if (!message.reasoning.empty())
            for (const std::string& key : reasoning_keys) entry[key] = message.reasoning;
        if (!message.tool_calls.empty()) one_analysis_for_a_call_turn(entry, reasoning_keys);
        messages.push_back(std::move(entry));
    }
    return messages;
}

}  // namespace

ChatTemplateInputs chat_template_inputs(const api::ChatRequest& request,
                                        const std::vector<std::string>& reasoning_keys) {
    ChatTemplateInputs inputs;
    inputs.messages = template_messages(request, reasoning_keys);
    if (request.tools.is_array()) inputs.tools = request.tools;
    if (request.chat_template_kwargs.is_object()) inputs.extra_context = request.chat_template_kwargs;
    // reasoning_effort as the variable templates read it (gpt-oss writes "Reasoning: <effort>" into its system
    // message); a chat_template_kwargs value of the same name wins.
    if (request.reasoning_effort && !inputs.extra_context.contains("reasoning_effort"))
        inputs.extra_context["reasoning_effort"] = std::string(api::reasoning_effort_name(*request.reasoning_effort));
    return inputs;
}

}  // namespace tempered
