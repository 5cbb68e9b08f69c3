// POST /v1/chat/completions.
#include <chrono>

#include "api/sse.h"
#include "chat/chat_template.h"
#include "server/endpoint_support.h"
#include "server/openai_service.h"
#include "server/stream_set.h"

namespace tempered {
namespace {

using Clock = std::chrono::steady_clock;

// The messages as the chat template sees them: the role, the text (text parts joined), name, tool calls.
nlohmann::ordered_json template_messages(const api::ChatRequest& request) {
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    for (const auto& message : request.messages) {
        nlohmann::ordered_json entry;
        entry["role"] = std::string(api::role_name(message.role));
        if (message.content_kind == api::ContentKind::None) entry["content"] = nullptr;
        else entry["content"] = message.content;
        if (!message.name.empty()) entry["name"] = message.name;
        if (!message.tool_call_id.empty()) entry["tool_call_id"] = message.tool_call_id;
        if (!message.tool_calls.empty()) {
            entry["tool_calls"] = nlohmann::ordered_json::array();
            for (const auto& call : message.tool_calls) {
                nlohmann::ordered_json arguments = nlohmann::ordered_json::parse(call.arguments, nullptr, false);
                entry["tool_calls"].push_back(
                    {{"id", call.id},
                     {"type", call.type},
                     {"function", {{"name", call.name}, {"arguments", arguments.is_discarded() ? nlohmann::ordered_json(call.arguments) : arguments}}}});
            }
        }
        messages.push_back(std::move(entry));
    }
    return messages;
}

}  // namespace

http::HttpResponse OpenAiService::chat(const http::HttpRequest& http_request) {
    const auto received = Clock::now();
    auto parsed = api::parse_chat_request(http_request.body);
    if (!parsed) return api::to_http_response(parsed.error());
    api::ChatRequest& request = *parsed;
    if (auto error = check_model(request.generation.model)) return api::to_http_response(*error);
    if (auto error = api::validate_chat_request(request, {model_.tokenizer->vocab_size()}))
        return api::to_http_response(*error);
    if (model_.chat_template.empty())
        return api::to_http_response(api::invalid_request("the model has no chat template; use /v1/completions"));

    ChatTemplateInputs inputs;
    inputs.messages = template_messages(request);
    if (request.tools.is_array()) inputs.tools = nlohmann::ordered_json::parse(request.tools.dump());
    if (auto bos = model_.tokenizer->bos_id()) inputs.bos_token = model_.tokenizer->token_text(*bos);
    if (auto eos = model_.tokenizer->eos_id()) inputs.eos_token = model_.tokenizer->token_text(*eos);
    if (request.chat_template_kwargs.is_object())
        inputs.extra_context = nlohmann::ordered_json::parse(request.chat_template_kwargs.dump());
    auto rendered = apply_chat_template(model_.chat_template, inputs);
    if (!rendered)
        return api::to_http_response(api::invalid_request("chat template: " + rendered.error().message, "messages"));

    const ResolvedSampling sampling = resolve(request.generation);
    auto options = generation_options(request.generation, model_.tokenize_chat(*rendered),
                                      request.logprobs ? request.top_logprobs : -1, sampling, "messages", std::nullopt);
    if (!options) return api::to_http_response(options.error());
    const int choices = options->n;
    auto stream = submit(std::move(options.value()));
    if (!stream) return api::to_http_response(stream.error());

    const api::ResponseMeta meta = api::make_chat_meta(settings_.served_model_name, system_fingerprint_);
    const nlohmann::json sampling_json = sampling.to_json();
    const bool report = settings_.report_sampling;
    const bool logprobs = request.logprobs;
    const std::string request_id = http_request.header("X-Request-Id").empty() ? meta.id : http_request.header("X-Request-Id");
    auto streams = std::make_shared<StreamSet>();
    streams->add(*stream, 0);

    auto log_finished = [this, request_id, sampling_json, received](const GenerationUsage& usage,
                                                                   const std::string& outcome, double first_token_s) {
        log_.write({{"id", request_id},
                    {"endpoint", "chat"},
                    {"outcome", outcome},
                    {"prompt_tokens", usage.prompt_tokens},
                    {"cached_tokens", usage.cached_tokens},
                    {"completion_tokens", usage.completion_tokens},
                    {"ttft_s", first_token_s},
                    {"total_s", std::chrono::duration<double>(Clock::now() - received).count()},
                    {"sampling", sampling_json}});
    };

    if (request.generation.stream) {
        const bool include_usage = request.generation.stream_options.include_usage;
        auto producer = [=, this](http::StreamWriter& writer) {
            double first_token_s = -1;
            // The first chunk of each choice carries the role (and, once, the sampling report).
            for (int choice = 0; choice < choices; ++choice) {
                api::ChatChunkChoice chunk;
                chunk.index = choice;
                chunk.delta.include_role = true;
                chunk.delta.content = "";
                nlohmann::json json = api::chat_chunk_json(meta, {chunk}, include_usage);
                if (report && choice == 0) json["sampling"] = sampling_json;
                if (!writer.write(api::sse_json(json))) {
                    streams->cancel_all();
                    return;
                }
            }
            std::string outcome = "stop";
            while (!streams->all_done()) {
                auto event = streams->next(kStreamPollInterval);
                if (!event) {
                    if (!writer.is_connection_alive()) {
                        streams->cancel_all();
                        metrics_.count_aborted();
                        log_finished(streams->usage(), "aborted", first_token_s);
                        return;
                    }
                    continue;
                }
                if (event->error) {
                    writer.write(api::sse_error(api::internal_error(*event->error)));
                    outcome = "error";
                    break;
                }
                for (const auto& delta : event->deltas) {
                    if (first_token_s < 0 && !delta.tokens.empty())
                        first_token_s = std::chrono::duration<double>(Clock::now() - received).count();
                    if (delta.text.empty() && !delta.finish && delta.logprobs.empty()) continue;
                    api::ChatChunkChoice chunk;
                    chunk.index = delta.index;
                    chunk.delta.content = delta.text;
                    if (delta.finish) {
                        chunk.finish_reason = to_api_finish_reason(*delta.finish);
                        outcome = finish_reason_name(*delta.finish);
                    }
                    if (logprobs) {
                        std::vector<api::TokenLogprob> content;
                        for (const auto& logprob : delta.logprobs) content.push_back(to_api_logprob(logprob));
                        chunk.logprobs = std::move(content);
                    }
                    if (!writer.write(api::sse_json(api::chat_chunk_json(meta, {chunk}, include_usage)))) {
                        streams->cancel_all();
                        metrics_.count_aborted();
                        log_finished(streams->usage(), "aborted", first_token_s);
                        return;
                    }
                }
            }
            if (include_usage && outcome != "error") {
                const GenerationUsage usage = streams->usage();
                writer.write(api::sse_json(api::chat_usage_chunk_json(
                    meta, {usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens})));
            }
            writer.write(api::sse_data("[DONE]"));
            log_finished(streams->usage(), outcome, first_token_s);
        };
        auto response = api::sse_response(producer, [streams](bool completed) {
            if (!completed) streams->cancel_all();
        });
        return response;
    }

    // Whole response: gather every choice, checking now and then that the client is still there.
    std::vector<api::ChatChoice> results(static_cast<size_t>(choices));
    for (int i = 0; i < choices; ++i) {
        results[static_cast<size_t>(i)].index = i;
        results[static_cast<size_t>(i)].content = "";
        if (logprobs) results[static_cast<size_t>(i)].logprobs.emplace();
    }
    double first_token_s = -1;
    std::string outcome = "stop";
    while (!streams->all_done()) {
        auto event = streams->next(kStreamPollInterval);
        if (!event) {
            if (!http_request.is_connection_alive()) {
                streams->cancel_all();
                metrics_.count_aborted();
                log_finished(streams->usage(), "aborted", first_token_s);
                return api::to_http_response(api::invalid_request("the client disconnected"));
            }
            continue;
        }
        if (event->error) {
            log_finished(streams->usage(), "error", first_token_s);
            return api::to_http_response(api::internal_error(*event->error));
        }
        for (const auto& delta : event->deltas) {
            if (first_token_s < 0 && !delta.tokens.empty())
                first_token_s = std::chrono::duration<double>(Clock::now() - received).count();
            api::ChatChoice& choice = results.at(static_cast<size_t>(delta.index));
            *choice.content += delta.text;
            if (delta.finish) {
                choice.finish_reason = to_api_finish_reason(*delta.finish);
                if (delta.index == 0) outcome = finish_reason_name(*delta.finish);
            }
            if (logprobs)
                for (const auto& logprob : delta.logprobs) choice.logprobs->push_back(to_api_logprob(logprob));
        }
    }
    const GenerationUsage usage = streams->usage();
    nlohmann::json body =
        api::chat_completion_json(meta, results, {usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens});
    if (report) body["sampling"] = sampling_json;
    log_finished(usage, outcome, first_token_s);
    return http::HttpResponse::json(200, api::dump_json(body));
}

}  // namespace tempered
