// POST /v1/chat/completions: the messages through the chat template, then the generation loop.
#include "server/chat_prompt.h"
#include "server/chat_response.h"
#include "server/openai_service.h"

namespace tempered {

api::ApiResult<std::vector<int32_t>> OpenAiService::chat_prompt(const api::ChatRequest& request) const {
    if (!chat_template_) return chat_template_.error();
    ChatTemplateInputs inputs = chat_template_inputs(request);
    if (auto bos = model_.tokenizer.bos_id()) inputs.bos_token = model_.tokenizer.token_text(*bos);
    if (auto eos = model_.tokenizer.eos_id()) inputs.eos_token = model_.tokenizer.token_text(*eos);
    auto rendered = chat_template_->apply(inputs);
    if (!rendered) return api::invalid_request("chat template: " + rendered.error().message, "messages");
    return model_.tokenizer.encode_chat(*rendered);
}

http::HttpResponse OpenAiService::chat(const http::HttpRequest& http_request) {
    const auto received = std::chrono::steady_clock::now();
    auto parsed = api::parse_chat_request(http_request.body);
    if (!parsed) return api::to_http_response(parsed.error());
    const api::ChatRequest& request = *parsed;
    if (auto error = check_model(request.generation.model)) return api::to_http_response(*error);
    if (auto error = api::validate_chat_request(request, {model_.tokenizer.vocab_size()}))
        return api::to_http_response(*error);
    auto tool_calls = tool_call_setup(request, tool_calls_);
    if (!tool_calls) return api::to_http_response(tool_calls.error());
    auto prompt = chat_prompt(request);
    if (!prompt) return api::to_http_response(prompt.error());

    const std::optional<std::string> client = client_of(http_request);
    const ResolvedSampling sampling = resolve(request.generation, client);
    auto options = generation_options(request.generation, std::move(prompt).value(),
                                      request.logprobs ? request.top_logprobs : -1, sampling, "messages", std::nullopt);
    if (!options) return api::to_http_response(options.error());
    auto constraint = output_constraint(request.generation, *tool_calls);
    if (!constraint) return api::to_http_response(constraint.error());
    options->constraint = std::move(constraint).value();
    options->reasoning = reasoning_options(reasoning_, settings_.reasoning, request, options->prompt);
    if (auto error = attach_disaggregation(request.generation, 0, 1, *options)) return api::to_http_response(*error);
    const int choices = options->n;
    const auto prompt_tokens = static_cast<int64_t>(options->prompt.size());
    auto stream = submit(std::move(options).value());
    if (!stream) return api::to_http_response(stream.error());

    const api::ResponseMeta meta = api::make_chat_meta(settings_.served_model_name, system_fingerprint_);
    GenerationJob job = generation_job("chat", http_request, request.generation, sampling, meta.id, received);
    job.client = client;
    job.streams->add(*stream, 0, prompt_tokens);
    const ChatResponseBuilder::Shape shape{
        .choices = choices, .logprobs = request.logprobs, .stream = job.stream, .include_usage = job.include_usage};
    auto builder = std::make_unique<ChatResponseBuilder>(model_.tokenizer, meta, shape);
    if (*tool_calls) builder->read_tool_calls(std::move(**tool_calls), metrics_);
    builder->count_answers(metrics_);
    job.builder = std::move(builder);
    return run_generation(std::move(job), http_request, metrics_, log_);
}

}  // namespace tempered
