#include "chat/chat_template_probe.h"

namespace tempered {
namespace {

using Json = nlohmann::ordered_json;

Json message(const char* role, const char* content) { return Json{{"role", role}, {"content", content}}; }

Json conversation() {
    return Json::array({message("system", "You are a helpful assistant."), message("user", "Hello."),
                        message("assistant", "Hello! How can I help?"), message("user", "What is 2 + 2?")});
}

// One OpenAI-style function tool, with the fields templates index into (name, description, parameters).
Json weather_tool() {
    const Json parameters = {{"type", "object"},
                             {"properties", {{"city", {{"type", "string"}, {"description", "The city."}}}}},
                             {"required", Json::array({"city"})}};
    return Json::array(
        {{{"type", "function"},
          {"function",
           {{"name", "get_weather"}, {"description", "The current weather in a city."}, {"parameters", parameters}}}}});
}

// "" when the render succeeded or raised; the note when the template does not fit the conversation.
Result<std::string> render_once(const ChatTemplate& chat_template, const ChatTemplateProbe& probe, Json messages,
                                Json tools, const char* what) {
    ChatTemplateInputs inputs;
    inputs.messages = std::move(messages);
    inputs.tools = std::move(tools);
    inputs.add_generation_prompt = true;
    inputs.bos_token = probe.bos_token;
    inputs.eos_token = probe.eos_token;
    inputs.limits = probe.limits;
    auto rendered = chat_template.apply_checked(inputs);
    if (rendered || rendered.error().raised_by_template) return std::string();
    const std::string failure = std::string(what) + ": " + rendered.error().message;
    if (rendered.error().limit_exceeded) return Error{failure};
    return "the chat template fails on the probe conversation (" + failure + "); requests like it will get a 400";
}

}  // namespace

Result<std::string> probe_chat_template(const ChatTemplate& chat_template, std::string_view template_source,
                                        const ChatTemplateProbe& probe) {
    auto plain = render_once(chat_template, probe, conversation(), nullptr, "system, user, assistant, user");
    if (!plain || template_source.find("tools") == std::string_view::npos) return plain;
    auto with_tools = render_once(chat_template, probe, Json::array({message("user", "The weather in Paris?")}),
                                  weather_tool(), "a user turn with one tool");
    if (!with_tools) return with_tools;
    return plain->empty() ? *with_tools : *plain;
}

}  // namespace tempered
