#include "server/chat_renderer.h"

#include "chat/reasoning_history.h"
#include "server/chat_prompt.h"

namespace tempered {
namespace {

api::ApiResult<ChatTemplate> parse_chat_template(const std::string& source) {
    if (source.empty()) return api::invalid_request("the model has no chat template; use /v1/completions");
    auto parsed = ChatTemplate::parse(source);
    if (!parsed) return api::invalid_request("chat template: " + parsed.error().message, "messages");
    return std::move(parsed).value();
}

}  // namespace

ChatRenderer::ChatRenderer(const Tokenizer& tokenizer, const std::string& template_source)
    : tokenizer_(tokenizer),
      parsed_(parse_chat_template(template_source)),
      reasoning_keys_(reasoning_keys(template_source)) {}

api::ApiResult<std::vector<int32_t>> ChatRenderer::render(const api::ChatRequest& request,
                                                          bool add_generation_prompt) const {
    if (!parsed_) return parsed_.error();
    ChatTemplateInputs inputs = chat_template_inputs(request, reasoning_keys_);
    inputs.add_generation_prompt = add_generation_prompt;
    if (auto bos = tokenizer_.bos_id()) inputs.bos_token = tokenizer_.token_text(*bos);
    if (auto eos = tokenizer_.eos_id()) inputs.eos_token = tokenizer_.token_text(*eos);
    auto rendered = parsed_->apply(inputs);
    if (!rendered) return api::invalid_request("chat template: " + rendered.error().message, "messages");
    return tokenizer_.encode_chat(*rendered);
}

}  // namespace tempered
