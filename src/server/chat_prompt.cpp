#include "server/chat_prompt.h"

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
    return inputs;
}

}  // namespace tempered
