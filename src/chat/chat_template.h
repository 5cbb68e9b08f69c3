// Chat templates: render a model's Jinja chat template over OpenAI-style messages the way
// transformers' apply_chat_template does (same variables, same environment, see jinja/jinja.h).
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "chat/jinja/jinja.h"
#include "core/result.h"

namespace tempered {

struct ChatTemplateInputs {
    // ordered_json keeps the key order of the request, which tool schemas printed with `tojson` need.
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();  // passed through as given
    nlohmann::ordered_json tools;                                       // null or array
    bool add_generation_prompt = true;
    std::string bos_token, eos_token;
    nlohmann::ordered_json extra_context;  // object or null: extra template variables, set last
    // Clock for strftime_now(); empty = system clock. Tests pin it for reproducible output.
    std::function<std::chrono::system_clock::time_point()> now;
    JinjaLimits limits;
};

// A model's chat template, parsed once (when the model is served) and applied to every request.
class ChatTemplate {
public:
    static Result<ChatTemplate> parse(std::string_view template_source, int max_depth = JinjaLimits{}.max_depth);
    // inputs.limits bound the rendering; the nesting depth of the template itself was bounded at parse.
    Result<std::string> apply(const ChatTemplateInputs& inputs) const;
    // The same, telling a template's own raise_exception() apart from other failures.
    Result<std::string, JinjaRenderError> apply_checked(const ChatTemplateInputs& inputs) const;

private:
    explicit ChatTemplate(ParsedJinja program) : program_(std::move(program)) {}
    ParsedJinja program_;
};

// Parses and applies in one go, for a template used once (`tempered run`).
Result<std::string> apply_chat_template(std::string_view template_source, const ChatTemplateInputs& inputs);

}  // namespace tempered
