#include "server/completion_service.h"

#include "server/completion_response.h"

namespace tempered {
namespace {

constexpr int64_t kDefaultCompletionTokens = 16;  // OpenAI's default max_tokens for /v1/completions

}  // namespace

void CompletionService::register_routes(GuardedRoutes& routes) {
    add_route(routes, "POST", "/v1/completions",
              [this](const http::HttpRequest& request) { return completions(request); });
}

std::optional<api::ApiError> CompletionService::check_completion_request(const api::CompletionRequest& request) const {
    if (auto error = path_.check_model(request.generation.model)) return error;
    if (auto error = path_.needs_own_model("/v1/completions")) return error;
    if (auto error = api::validate_completion_request(request, path_.request_limits())) return error;
    if (request.echo && request.logprobs)
        return api::invalid_request("echo together with logprobs (prompt log-probabilities) is not supported", "echo");
    return std::nullopt;
}

CompletionService::CompletionPrompts CompletionService::completion_prompts(
    const api::CompletionRequest& request) const {
    CompletionPrompts prompts;
    for (const auto& input : request.prompts) {
        if (const auto* text = std::get_if<std::string>(&input)) {
            prompts.tokens.push_back(
                path_.model().tokenizer.encode(*text, /*add_special_tokens=*/true, /*parse_special=*/true));
            prompts.texts.push_back(*text);
        } else {
            prompts.tokens.push_back(std::get<std::vector<int32_t>>(input));
            prompts.texts.push_back(path_.model().tokenizer.decode(prompts.tokens.back()));
        }
    }
    return prompts;
}

std::optional<api::ApiError> CompletionService::submit_prompts(const api::CompletionRequest& request,
                                                               const CompletionPrompts& prompts,
                                                               const ResolvedSampling& sampling, bool score_only,
                                                               StreamSet& streams) {
    // Every prompt is checked before any is submitted, so a bad one refuses the request whole.
    std::vector<GenerationOptions> all_options;
    auto constraint = path_.response_constraint(request.generation);
    if (!constraint) return constraint.error();
    for (size_t p = 0; p < prompts.tokens.size(); ++p) {
        const std::string param = request.prompt_is_batch ? api::param_path("prompt", p) : "prompt";
        auto options =
            path_.generation_options(request.generation, prompts.tokens[p], request.logprobs.value_or(-1), sampling,
                                     param.c_str(), kDefaultCompletionTokens, prompts.tokens.size());
        if (!options) return options.error();
        options->constraint = *constraint;
        if (auto error = path_.check_grammar_room(*options)) return error;
        if (auto error = path_.attach_disaggregation(request.generation, p, prompts.tokens.size(), *options))
            return error;
        all_options.push_back(std::move(options).value());
    }
    for (size_t p = 0; p < all_options.size(); ++p) {
        const auto prompt_tokens = static_cast<int64_t>(prompts.tokens[p].size());
        if (score_only) {  // max_tokens 0 (with echo: the prompt back) needs no generation
            streams.add_scored_prompt(prompt_tokens);
            continue;
        }
        auto stream = path_.submit(std::move(all_options[p]));
        if (!stream) {
            streams.cancel_all();
            return stream.error();
        }
        streams.add(*stream, static_cast<int>(p) * path_.choices_here(request.generation), prompt_tokens);
    }
    return std::nullopt;
}

http::HttpResponse CompletionService::completions(const http::HttpRequest& http_request) {
    const auto received = std::chrono::steady_clock::now();
    auto parsed = api::parse_completion_request(http_request.body);
    if (!parsed) return api::to_http_response(parsed.error());
    const api::CompletionRequest& request = *parsed;
    if (auto error = check_completion_request(request)) return api::to_http_response(*error);
    const CompletionPrompts prompts = completion_prompts(request);

    const std::optional<std::string> client = path_.client_of(http_request);
    const ResolvedSampling sampling = path_.resolve(request.generation, client);
    const bool score_only = request.generation.max_tokens.given() && *request.generation.max_tokens.value == 0;
    const api::ResponseMeta meta =
        api::make_completion_meta(path_.settings().served_model_name, path_.system_fingerprint());
    GenerationJob job =
        path_.generation_job("completions", http_request, request.generation, sampling, meta.id, received);
    job.client = client;
    if (auto error = submit_prompts(request, prompts, sampling, score_only, *job.streams))
        return api::to_http_response(*error);
    if (score_only) job.outcome = "length";
    job.builder = std::make_unique<CompletionResponseBuilder>(
        path_.model().tokenizer, meta, prompts.texts,
        CompletionResponseBuilder::Shape{.choices_per_prompt = path_.choices_here(request.generation),
                                         .echo = request.echo,
                                         .logprobs = request.logprobs.has_value(),
                                         .score_only = score_only,
                                         .stream = job.stream,
                                         .include_usage = job.include_usage,
                                         .token_ids = request.return_token_ids,
                                         .tokens_as_ids = request.return_tokens_as_token_ids});
    return path_.answer(std::move(job), http_request);
}

}  // namespace tempered
