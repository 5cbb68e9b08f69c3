#include "chat/chat_template.h"

namespace tempered {

Result<ChatTemplate> ChatTemplate::parse(std::string_view template_source, int max_depth) {
    auto program = ParsedJinja::parse(template_source, max_depth);
    if (!program) return program.error();
    return ChatTemplate(std::move(program).value());
}

Result<std::string> ChatTemplate::apply(const ChatTemplateInputs& inputs) const {
    auto rendered = apply_checked(inputs);
    if (!rendered) return Error{rendered.error().message};
    return std::move(rendered).value();
}

Result<std::string, JinjaRenderError> ChatTemplate::apply_checked(const ChatTemplateInputs& inputs) const {
    if (!inputs.messages.is_array()) return JinjaRenderError{"chat template: messages must be an array"};
    if (!inputs.tools.is_null() && !inputs.tools.is_array())
        return JinjaRenderError{"chat template: tools must be an array"};
    if (!inputs.extra_context.is_null() && !inputs.extra_context.is_object()) {
        return JinjaRenderError{"chat template: extra context must be an object"};
    }
    // The variables transformers passes: messages, tools, documents, add_generation_prompt and the
    // tokenizer's special tokens; template kwargs come last and may override them.
    nlohmann::ordered_json context = nlohmann::ordered_json::object();
    context["messages"] = inputs.messages;
    context["tools"] = inputs.tools;
    context["documents"] = nullptr;
    context["add_generation_prompt"] = inputs.add_generation_prompt;
    context["bos_token"] = inputs.bos_token;
    context["eos_token"] = inputs.eos_token;
    if (inputs.extra_context.is_object()) {
        for (const auto& [key, value] : inputs.extra_context.items()) context[key] = value;
    }
    JinjaOptions options;
    options.limits = inputs.limits;
    options.now = inputs.now;
    return program_.render_checked(context, options);
}

Result<std::string> apply_chat_template(std::string_view template_source, const ChatTemplateInputs& inputs) {
    auto parsed = ChatTemplate::parse(template_source, inputs.limits.max_depth);
    if (!parsed) return parsed.error();
    return parsed->apply(inputs);
}

}  // namespace tempered
