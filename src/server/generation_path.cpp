#include "server/generation_path.h"

#include <chrono>
#include <random>

#include "api/sse.h"

namespace tempered {
namespace {

uint64_t random_seed() {
    thread_local std::mt19937_64 generator{std::random_device{}()};
    return generator();
}

}  // namespace

http::HttpResponse json_response(const nlohmann::json& body, int status) {
    return http::HttpResponse::json(status, api::dump_json(body));
}

void add_route(GuardedRoutes& routes, std::string method, std::string_view path, http::HttpHandler handler,
               api::ErrorEnvelope envelope) {
    routes.route(
        std::move(method), path,
        [handler = std::move(handler)](const http::HttpRequest& request) {
            http::HttpResponse response = handler(request);
            if (const std::string id = request.header("X-Request-Id");
                !id.empty() && !response.headers.count("X-Request-Id"))
                response.headers.emplace("X-Request-Id", id);
            return response;
        },
        envelope);
}

GenerationPath::GenerationPath(ServedModel model, Generator& generator, ServingMetrics& metrics, RequestLog& log,
                               ServiceSettings settings)
    : model_(std::move(model)),
      generator_(generator),
      metrics_(metrics),
      log_(log),
      settings_(std::move(settings)),
      system_fingerprint_("tempered-" + settings_.served_model_name),
      structured_output_(model_.tokenizer, model_.config.vocab_size),
      chat_renderer_(model_.tokenizer, model_.chat_template),
      dry_breakers_(dry_vocabulary(model_.tokenizer)) {}

ResolvedSampling GenerationPath::resolve(const api::GenerationRequest& generation,
                                         const std::optional<std::string>& client) {
    ResolvedSampling sampling =
        resolve_sampling(api::to_sampling_values(generation.sampling), settings_.sampling, random_seed());
    metrics_.count_sampling_sources(sampling, client.value_or(""));
    if (sampling.temperature.value == 0) metrics_.count_greedy(client.value_or(""));
    return sampling;
}

std::optional<std::string> GenerationPath::client_of(const http::HttpRequest& request) const {
    return settings_.access ? settings_.access->client_of(request) : std::nullopt;
}

std::optional<api::ApiError> GenerationPath::check_model(const std::string& requested) const {
    if (!requested.empty() && requested != settings_.served_model_name) return api::model_not_found(requested);
    if (draining_) return api::service_unavailable("the server is shutting down", 5);
    return std::nullopt;
}

std::optional<api::ApiError> GenerationPath::needs_own_model(const std::string& what) const {
    if (model_.has_model) return std::nullopt;
    return api::invalid_request(what +
                                " needs the model's own tokenizer, and this server fronts an upstream "
                                "without one (serve with --model naming the upstream model's GGUF)");
}

api::ModelLimits GenerationPath::request_limits() const {
    return {model_.has_model ? model_.tokenizer.vocab_size() : INT32_MAX};
}

api::ApiResult<GenerationOptions> GenerationPath::generation_options(const api::GenerationRequest& generation,
                                                                     std::vector<int32_t> prompt, int top_logprobs,
                                                                     const ResolvedSampling& sampling,
                                                                     const char* prompt_param,
                                                                     std::optional<int64_t> default_max_tokens,
                                                                     size_t prompts) const {
    const int64_t context = model_.config.context_length;
    const auto prompt_length = static_cast<int64_t>(prompt.size());
    if (prompt_length == 0) return api::invalid_request("the prompt is empty", prompt_param);
    if (auto error = check_prompt_tokens(settings_.limits, prompt_length, prompt_param)) return *error;
    // Chat's default is "up to the context"; legacy completions default to 16 tokens, as OpenAI's do.
    auto chosen =
        choice_max_tokens(settings_.limits, generation, default_max_tokens.value_or(context - prompt_length), prompts);
    if (!chosen) return chosen.error();
    const int64_t max_tokens = *chosen;
    // Compared without adding: max_tokens may be as large as int64 allows.
    if (prompt_length >= context || max_tokens > context - prompt_length)
        return api::context_length_exceeded(context, prompt_length, max_tokens, prompt_param);
    return filled_options(generation, std::move(prompt), max_tokens, top_logprobs, sampling);
}

api::ApiResult<GenerationOptions> GenerationPath::passthrough_options(const api::GenerationRequest& generation,
                                                                      const ResolvedSampling& sampling) const {
    auto max_tokens = choice_max_tokens(settings_.limits, generation, GenerationOptions::kUpstreamDecides, 1);
    if (!max_tokens) return max_tokens.error();
    return filled_options(generation, {}, *max_tokens, -1, sampling);
}

GenerationOptions GenerationPath::filled_options(const api::GenerationRequest& generation, std::vector<int32_t> prompt,
                                                 int64_t max_tokens, int top_logprobs,
                                                 const ResolvedSampling& sampling) const {
    GenerationOptions options;
    options.prompt = std::move(prompt);
    options.n = generation.n;
    options.max_tokens = max_tokens;
    options.min_tokens = generation.min_tokens.value_or(0);
    options.ignore_eos = generation.ignore_eos;
    options.speculate = generation.speculative_decoding;
    options.stop = generation.stop;
    options.sampling = sampling.sampler_params();
    for (const auto& [token, bias] : generation.logit_bias)
        options.sampling.logit_bias.emplace_back(static_cast<int32_t>(token), static_cast<float>(bias));
    options.penalties = sampling.penalty_params();
    options.dry = sampling.dry_params();
    if (options.dry.active()) options.dry.breakers = dry_breakers_.breakers_for(sampling.dry_sequence_breakers.value);
    options.seed = static_cast<uint64_t>(sampling.seed.value);
    options.top_logprobs = top_logprobs;
    options.guard = guard_for_request(settings_.degeneration.guard, generation.repetition_detection);
    return options;
}

std::optional<api::ApiError> GenerationPath::attach_disaggregation(const api::GenerationRequest& generation,
                                                                   size_t prompt, size_t prompts,
                                                                   GenerationOptions& options) const {
    if (!settings_.disaggregation) return std::nullopt;
    return settings_.disaggregation->attach(generation.bootstrap, prompt, prompts, generation.n, options);
}

api::ApiResult<std::shared_ptr<GenerationStream>> GenerationPath::submit(GenerationOptions options) {
    SubmitResult result = generator_.submit(std::move(options));
    if (result.stream) return result.stream;
    if (result.unsupported) return api::invalid_request(result.unsupported->message, result.unsupported->param);
    if (*result.refusal == SubmitRefusal::QueueFull) {
        metrics_.count_rejected();
        return api::rate_limited("too many requests are waiting; retry shortly", 1);
    }
    return api::service_unavailable("the server is shutting down", 5);
}

api::ApiResult<std::shared_ptr<const grammar::Constraint>> GenerationPath::response_constraint(
    const api::GenerationRequest& generation) {
    auto constraint = structured_output_.constraint_for(generation.response_format);
    if (constraint && *constraint)
        metrics_.count_structured(api::response_format_kind_name(generation.response_format.kind));
    return constraint;
}

api::ApiResult<std::shared_ptr<const grammar::Constraint>> GenerationPath::output_constraint(
    const api::GenerationRequest& generation, const std::optional<ToolCallSetup>& tools) {
    const bool forced_calls = tools && tools->forced && tools->validation == ToolCallValidation::Constrain;
    if (!forced_calls) {
        auto constraint = response_constraint(generation);
        if (!constraint || *constraint || !tools) return constraint;
    }
    auto constraint = structured_output_.tool_call_constraint(*tools);
    if (constraint && *constraint) metrics_.count_structured("tool_call");
    return constraint;
}

// Values the generator cannot apply (upstream mode) say so in the report, and are counted: never silently
// dropped.
void GenerationPath::mark_unapplied(const ResolvedSampling& sampling, nlohmann::json& report) const {
    GenerationOptions sent;
    sent.sampling = sampling.sampler_params();
    sent.penalties = sampling.penalty_params();
    sent.dry = sampling.dry_params();
    for (const std::string& param : generator_.unapplied(sent)) {
        if (report.contains(param)) report[param]["applied"] = false;
        metrics_.count_unapplied(param);
    }
}

std::optional<api::ApiError> GenerationPath::check_grammar_room(const GenerationOptions& options) const {
    const grammar::Constraint* constraint = options.constraint.get();
    if (constraint == nullptr || constraint->starts_lazily() || options.max_tokens <= 0 || !model_.has_model)
        return std::nullopt;
    const std::optional<std::string> shortest = constraint->lengths().shortest_sentence();
    if (!shortest) return std::nullopt;
    const size_t needed = model_.tokenizer.encode(*shortest, false, true).size();
    if (static_cast<size_t>(options.max_tokens) >= needed) return std::nullopt;
    return api::invalid_request("max_tokens is " + std::to_string(options.max_tokens) +
                                    ", but the shortest answer the format allows takes " + std::to_string(needed) +
                                    " tokens (" + *shortest + ").",
                                "max_tokens", "max_tokens_too_small");
}

GenerationJob GenerationPath::generation_job(const char* endpoint, const http::HttpRequest& http_request,
                                             const api::GenerationRequest& generation, const ResolvedSampling& sampling,
                                             const std::string& response_id,
                                             std::chrono::steady_clock::time_point received) const {
    GenerationJob job;
    job.streams = std::make_shared<StreamSet>();
    job.stream = generation.stream;
    job.include_usage = generation.stream && generation.stream_options.include_usage;
    job.report_sampling = settings_.report_sampling;
    job.sampling = sampling.to_json();
    mark_unapplied(sampling, job.sampling);
    // A grammar shapes the draw as the sampling values do, so it is reported beside them.
    if (generation.response_format.kind != api::ResponseFormat::Kind::Text)
        job.sampling["response_format"] = {{"value", api::response_format_kind_name(generation.response_format.kind)},
                                           {"source", "request"}};
    job.endpoint = endpoint;
    const std::string client_id = http_request.header("X-Request-Id");
    job.request_id = client_id.empty() ? response_id : client_id;
    job.received = received;
    if (settings_.limits.timeout_seconds > 0) {
        job.timeout_seconds = settings_.limits.timeout_seconds;
        job.deadline = received + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                      std::chrono::duration<double>(settings_.limits.timeout_seconds));
    }
    return job;
}

}  // namespace tempered
