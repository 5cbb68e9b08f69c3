// POST /v1/completions: one or several prompts (text or token ids), n choices each.
#include <chrono>

#include "api/sse.h"
#include "server/endpoint_support.h"
#include "server/openai_service.h"
#include "server/stream_set.h"

namespace tempered {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t kDefaultCompletionTokens = 16;  // OpenAI's default max_tokens for /v1/completions

// A choice being assembled: its text so far and, when asked, OpenAI's parallel logprob arrays.
struct ChoiceText {
    std::string text;
    std::optional<FinishReason> finish;
    api::CompletionLogprobs logprobs;
    int64_t token_offset = 0;  // where the next token's text starts in `text` (by token bytes)
};

}  // namespace

http::HttpResponse OpenAiService::completions(const http::HttpRequest& http_request) {
    const auto received = Clock::now();
    auto parsed = api::parse_completion_request(http_request.body);
    if (!parsed) return api::to_http_response(parsed.error());
    api::CompletionRequest& request = *parsed;
    if (auto error = check_model(request.generation.model)) return api::to_http_response(*error);
    if (auto error = api::validate_completion_request(request, {model_.tokenizer->vocab_size()}))
        return api::to_http_response(*error);
    const bool want_logprobs = request.logprobs.has_value();
    if (request.echo && want_logprobs)
        return api::to_http_response(
            api::invalid_request("echo together with logprobs (prompt log-probabilities) is not supported", "echo"));

    // Every prompt as tokens, and its text for echo.
    std::vector<std::vector<int32_t>> prompts;
    std::vector<std::string> prompt_texts;
    for (const auto& input : request.prompts) {
        if (const auto* text = std::get_if<std::string>(&input)) {
            prompts.push_back(model_.tokenizer->encode(*text, /*add_special_tokens=*/true, /*parse_special=*/true));
            prompt_texts.push_back(*text);
        } else {
            prompts.push_back(std::get<std::vector<int32_t>>(input));
            prompt_texts.push_back(model_.tokenizer->decode(prompts.back()));
        }
    }

    const ResolvedSampling sampling = resolve(request.generation);
    const int n = request.generation.n;
    const bool score_only = request.generation.max_tokens.given() && *request.generation.max_tokens.value == 0;
    auto streams = std::make_shared<StreamSet>();
    std::vector<GenerationOptions> all_options;
    for (size_t p = 0; p < prompts.size(); ++p) {
        const std::string param = request.prompt_is_batch ? api::param_path("prompt", p) : "prompt";
        auto options = generation_options(request.generation, prompts[p], want_logprobs ? *request.logprobs : -1,
                                          sampling, param.c_str(), kDefaultCompletionTokens);
        if (!options) return api::to_http_response(options.error());
        all_options.push_back(std::move(options.value()));
    }
    if (!score_only) {  // max_tokens 0 (with echo: the prompt back) needs no generation
        for (size_t p = 0; p < all_options.size(); ++p) {
            auto stream = submit(std::move(all_options[p]));
            if (!stream) {
                streams->cancel_all();
                return api::to_http_response(stream.error());
            }
            streams->add(*stream, static_cast<int>(p) * n);
        }
    }

    const api::ResponseMeta meta = api::make_completion_meta(settings_.served_model_name, system_fingerprint_);
    const nlohmann::json sampling_json = sampling.to_json();
    const bool report = settings_.report_sampling;
    const size_t choice_count = prompts.size() * static_cast<size_t>(n);
    auto choices = std::make_shared<std::vector<ChoiceText>>(choice_count);
    int64_t prompt_token_total = 0;
    for (const auto& prompt : prompts) prompt_token_total += static_cast<int64_t>(prompt.size());
    if (request.echo)
        for (size_t c = 0; c < choice_count; ++c) {
            (*choices)[c].text = prompt_texts[c / static_cast<size_t>(n)];
            (*choices)[c].token_offset = static_cast<int64_t>((*choices)[c].text.size());
        }
    const std::string request_id =
        http_request.header("X-Request-Id").empty() ? meta.id : http_request.header("X-Request-Id");
    auto log_finished = [this, request_id, sampling_json, received](const GenerationUsage& usage,
                                                                   const std::string& outcome) {
        log_.write({{"id", request_id},
                    {"endpoint", "completions"},
                    {"outcome", outcome},
                    {"prompt_tokens", usage.prompt_tokens},
                    {"cached_tokens", usage.cached_tokens},
                    {"completion_tokens", usage.completion_tokens},
                    {"total_s", std::chrono::duration<double>(Clock::now() - received).count()},
                    {"sampling", sampling_json}});
    };

    // Applies one delta to its choice; returns the choice's chunk for streaming.
    auto apply = [this, choices, want_logprobs](const ChoiceDelta& delta) {
        ChoiceText& choice = choices->at(static_cast<size_t>(delta.index));
        api::CompletionChoice chunk;
        chunk.index = delta.index;
        chunk.text = delta.text;
        choice.text += delta.text;
        if (want_logprobs) {
            api::CompletionLogprobs part;
            for (const auto& logprob : delta.logprobs) {
                const std::string& bytes = model_.tokenizer->token_bytes(logprob.token);
                std::vector<std::pair<std::string, double>> top;
                for (const auto& [token, value] : logprob.top) top.emplace_back(model_.tokenizer->token_bytes(token), value);
                for (auto* target : {&choice.logprobs, &part}) {
                    target->tokens.push_back(bytes);
                    target->token_logprobs.push_back(logprob.logprob);
                    target->top_logprobs.push_back(top);
                    target->text_offset.push_back(choice.token_offset);
                }
                choice.token_offset += static_cast<int64_t>(bytes.size());
            }
            chunk.logprobs = std::move(part);
        }
        if (delta.finish) {
            choice.finish = delta.finish;
            chunk.finish_reason = to_api_finish_reason(*delta.finish);
        }
        return chunk;
    };

    if (request.generation.stream) {
        const bool include_usage = request.generation.stream_options.include_usage;
        auto producer = [=, this](http::StreamWriter& writer) {
            // A first chunk per choice: the echoed prompt (or nothing) and, once, the sampling report.
            for (size_t c = 0; c < choice_count; ++c) {
                api::CompletionChoice first;
                first.index = static_cast<int>(c);
                first.text = request.echo ? (*choices)[c].text : "";
                if (score_only) first.finish_reason = api::FinishReason::Length;
                nlohmann::json json = api::text_completion_chunk_json(meta, {first}, include_usage);
                if (report && c == 0) json["sampling"] = sampling_json;
                if (!writer.write(api::sse_json(json))) {
                    streams->cancel_all();
                    return;
                }
            }
            std::string outcome = score_only ? "length" : "stop";
            while (!streams->all_done()) {
                auto event = streams->next(kStreamPollInterval);
                if (!event) {
                    if (!writer.is_connection_alive()) {
                        streams->cancel_all();
                        metrics_.count_aborted();
                        log_finished(streams->usage(), "aborted");
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
                    api::CompletionChoice chunk = apply(delta);
                    if (delta.finish) outcome = finish_reason_name(*delta.finish);
                    if (chunk.text.empty() && !chunk.finish_reason && delta.logprobs.empty()) continue;
                    if (!writer.write(api::sse_json(api::text_completion_chunk_json(meta, {chunk}, include_usage)))) {
                        streams->cancel_all();
                        metrics_.count_aborted();
                        log_finished(streams->usage(), "aborted");
                        return;
                    }
                }
            }
            GenerationUsage usage = streams->usage();
            if (score_only) usage.prompt_tokens = prompt_token_total;
            if (include_usage && outcome != "error")
                writer.write(api::sse_json(api::text_completion_usage_chunk_json(
                    meta, {usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens})));
            writer.write(api::sse_data("[DONE]"));
            log_finished(usage, outcome);
        };
        auto response = api::sse_response(producer, [streams](bool completed) {
            if (!completed) streams->cancel_all();
        });
        return response;
    }

    std::string outcome = score_only ? "length" : "stop";
    while (!streams->all_done()) {
        auto event = streams->next(kStreamPollInterval);
        if (!event) {
            if (!http_request.is_connection_alive()) {
                streams->cancel_all();
                metrics_.count_aborted();
                log_finished(streams->usage(), "aborted");
                return api::to_http_response(api::invalid_request("the client disconnected"));
            }
            continue;
        }
        if (event->error) {
            log_finished(streams->usage(), "error");
            return api::to_http_response(api::internal_error(*event->error));
        }
        for (const auto& delta : event->deltas) {
            apply(delta);
            if (delta.finish && delta.index == 0) outcome = finish_reason_name(*delta.finish);
        }
    }
    std::vector<api::CompletionChoice> results;
    for (size_t c = 0; c < choice_count; ++c) {
        api::CompletionChoice choice;
        choice.index = static_cast<int>(c);
        choice.text = (*choices)[c].text;
        choice.finish_reason = (*choices)[c].finish ? to_api_finish_reason(*(*choices)[c].finish) : api::FinishReason::Length;
        if (want_logprobs) choice.logprobs = (*choices)[c].logprobs;
        results.push_back(std::move(choice));
    }
    GenerationUsage usage = streams->usage();
    if (score_only) usage.prompt_tokens = prompt_token_total;
    nlohmann::json body =
        api::text_completion_json(meta, results, {usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens});
    if (report) body["sampling"] = sampling_json;
    log_finished(usage, outcome);
    return http::HttpResponse::json(200, api::dump_json(body));
}

}  // namespace tempered
