#include "server/openai_service.h"

#include <chrono>
#include <random>

#include "api/sse.h"

namespace tempered {
namespace {

http::HttpResponse json_response(const nlohmann::json& body, int status = 200) {
    return http::HttpResponse::json(status, api::dump_json(body));
}

uint64_t random_seed() {
    thread_local std::mt19937_64 generator{std::random_device{}()};
    return generator();
}

api::ApiResult<ChatTemplate> parse_chat_template(const std::string& source) {
    if (source.empty()) return api::invalid_request("the model has no chat template; use /v1/completions");
    auto parsed = ChatTemplate::parse(source);
    if (!parsed) return api::invalid_request("chat template: " + parsed.error().message, "messages");
    return std::move(parsed).value();
}

// The parser named by the flag, or the one the chat template teaches.
ToolCallSettings choose_tool_calls(const ServiceSettings& settings, const std::string& chat_template) {
    ToolCallSettings chosen;
    chosen.validation = settings.tool_call_validation;
    if (settings.tool_call_parser == "auto")
        chosen.family = toolcalls::detect_family(chat_template);
    else if (settings.tool_call_parser != "none")
        chosen.family = toolcalls::family_from_name(settings.tool_call_parser);
    return chosen;
}

}  // namespace

OpenAiService::OpenAiService(ServedModel model, Engine& engine, ServingMetrics& metrics, RequestLog& log,
                             ServiceSettings settings)
    : model_(std::move(model)),
      chat_template_(parse_chat_template(model_.chat_template)),
      engine_(engine),
      metrics_(metrics),
      log_(log),
      settings_(std::move(settings)),
      structured_output_(model_.tokenizer, model_.config.vocab_size),
      dry_breakers_(dry_vocabulary(model_.tokenizer)) {
    system_fingerprint_ = "tempered-" + settings_.served_model_name;
    tool_calls_ = choose_tool_calls(settings_, model_.chat_template);
    const std::string parser_flag = " (--tool-call-parser " + settings_.tool_call_parser + ")";
    if (tool_calls_.family)
        log_.info("tool calls: read with the " + std::string(toolcalls::family_name(*tool_calls_.family)) + " parser" +
                  parser_flag);
    else
        log_.info("tool calls: not parsed, answers are content" + parser_flag);
    reasoning_ = choose_reasoning(settings_.reasoning, model_.chat_template, model_.tokenizer);
    log_.info(reasoning_.why);
    if (!chat_template_ && !model_.chat_template.empty())
        log_.info("chat requests will be refused: " + chat_template_.error().message);
}

void OpenAiService::register_routes(GuardedRoutes& server) {
    // Every response echoes the client's X-Request-Id, errors included, so logs on both sides join up.
    auto bind = [this](auto method) {
        return [this, method](const http::HttpRequest& request) {
            http::HttpResponse response = (this->*method)(request);
            if (const std::string id = request.header("X-Request-Id");
                !id.empty() && !response.headers.count("X-Request-Id"))
                response.headers.emplace("X-Request-Id", id);
            return response;
        };
    };
    server.route("POST", "/v1/chat/completions", bind(&OpenAiService::chat));
    server.route("POST", "/v1/completions", bind(&OpenAiService::completions));
    server.route("GET", "/v1/models", bind(&OpenAiService::models));
    server.route("GET", "/v1/models/{model}", bind(&OpenAiService::model));
    server.route("GET", "/health", bind(&OpenAiService::health));
    server.route("POST", "/tokenize", bind(&OpenAiService::tokenize));
    server.route("POST", "/detokenize", bind(&OpenAiService::detokenize));
    server.route("GET", "/get_load", bind(&OpenAiService::get_load));
    server.route("GET", "/health_generate", bind(&OpenAiService::health_generate));
    server.route("GET", "/server_info", bind(&OpenAiService::server_info));
    server.route("GET", "/model_info", bind(&OpenAiService::model_info));
    // SGLang's names, which sgl-model-gateway probes at registration.
    server.route("GET", "/get_server_info", bind(&OpenAiService::server_info));
    server.route("GET", "/get_model_info", bind(&OpenAiService::model_info));
    // sgl-model-gateway's own /flush_cache POSTs here on every worker; SGLang takes GET too.
    server.route("POST", "/flush_cache", bind(&OpenAiService::flush_cache));
    server.route("GET", "/flush_cache", bind(&OpenAiService::flush_cache));
    server.route("GET", "/metrics", bind(&OpenAiService::metrics));
}

nlohmann::json OpenAiService::model_card() const {
    return {{"id", settings_.served_model_name},
            {"object", "model"},
            {"created", settings_.created},
            {"owned_by", "tempered"},
            {"max_model_len", model_.config.context_length},
            {"kv_cache_dtype", settings_.kv_cache_dtype},
            {"sampling_defaults", describe_sampling_defaults(settings_.sampling)}};
}

http::HttpResponse OpenAiService::models(const http::HttpRequest&) const {
    return json_response({{"object", "list"}, {"data", nlohmann::json::array({model_card()})}});
}

http::HttpResponse OpenAiService::model(const http::HttpRequest& request) const {
    const auto it = request.path_params.find("model");
    if (it == request.path_params.end() || it->second != settings_.served_model_name)
        return api::to_http_response(api::model_not_found(it == request.path_params.end() ? "" : it->second));
    return json_response(model_card());
}

http::HttpResponse OpenAiService::health(const http::HttpRequest&) const {
    if (draining_) return json_response({{"status", "draining"}}, 503);
    return json_response({{"status", "ok"}});
}

// SGLang's deeper probe: /health says the process answers, this says the engine still generates. One greedy
// token from a one-token prompt, through the same queue as every request (so a full queue is a 503 too).
http::HttpResponse OpenAiService::health_generate(const http::HttpRequest&) {
    if (draining_) return json_response({{"status", "draining"}}, 503);
    GenerationOptions options;
    options.prompt = model_.tokenizer.encode("ping", /*add_special_tokens=*/true, /*parse_special=*/false);
    options.prompt.resize(1);
    options.max_tokens = 1;
    options.sampling.temperature = 0.0f;
    SubmitResult submitted = engine_.submit(std::move(options));
    if (!submitted.stream) return json_response({{"status", "unavailable"}}, 503);
    const auto deadline = std::chrono::steady_clock::now() + kHealthGenerateTimeout;
    while (std::chrono::steady_clock::now() < deadline) {
        auto event = submitted.stream->next(kStreamPollInterval);
        if (!event || !event->done) continue;
        if (event->error) return json_response({{"status", "error"}, {"error", *event->error}}, 503);
        return json_response({{"status", "ok"}});
    }
    submitted.stream->cancel();
    return json_response({{"status", "timeout"}}, 503);
}

http::HttpResponse OpenAiService::tokenize(const http::HttpRequest& request) const {
    auto body = api::parse_json_object(request.body);
    if (!body) return api::to_http_response(body.error());
    const api::Json* text = api::find_field(*body, "prompt");
    if (!text) text = api::find_field(*body, "content");  // llama.cpp's name for it
    if (!text || !text->is_string())
        return api::to_http_response(api::invalid_request("'prompt' must be a string", "prompt"));
    bool add_special = true;
    if (const api::Json* flag = api::find_field(*body, "add_special_tokens")) {
        if (!flag->is_boolean())
            return api::to_http_response(
                api::invalid_request("'add_special_tokens' must be a boolean", "add_special_tokens"));
        add_special = flag->get<bool>();
    }
    const auto tokens = model_.tokenizer.encode(text->get<std::string>(), add_special, /*parse_special=*/true);
    return json_response(
        {{"tokens", tokens}, {"count", tokens.size()}, {"max_model_len", model_.config.context_length}});
}

http::HttpResponse OpenAiService::detokenize(const http::HttpRequest& request) const {
    auto body = api::parse_json_object(request.body);
    if (!body) return api::to_http_response(body.error());
    const api::Json* tokens = api::find_field(*body, "tokens");
    if (!tokens || !tokens->is_array())
        return api::to_http_response(api::invalid_request("'tokens' must be an array of token ids", "tokens"));
    std::vector<int32_t> ids;
    for (size_t i = 0; i < tokens->size(); ++i) {
        const auto& id = (*tokens)[i];
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= model_.tokenizer.vocab_size())
            return api::to_http_response(api::invalid_request(
                "token ids must be integers in [0, " + std::to_string(model_.tokenizer.vocab_size()) + ")",
                api::param_path("tokens", i)));
        ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
    }
    return json_response({{"prompt", model_.tokenizer.decode(ids)}});
}

http::HttpResponse OpenAiService::metrics(const http::HttpRequest&) const {
    return http::HttpResponse::text(200, metrics_.render(), std::string(metrics::Registry::kContentType));
}

// sgl-model-gateway's load-aware policies read only num_tokens (summed over the array's DP ranks), as
// SGLang counts it: tokens the running requests hold in the KV cache plus the prompts still waiting.
http::HttpResponse OpenAiService::get_load(const http::HttpRequest&) const {
    const EngineStats stats = engine_.stats();
    return json_response(nlohmann::json::array({{{"dp_rank", 0},
                                                 {"num_reqs", stats.running_requests + stats.waiting_requests},
                                                 {"num_waiting_reqs", stats.waiting_requests},
                                                 {"num_tokens", stats.tokens_in_kv + stats.waiting_prompt_tokens}}}));
}

// The GGUF file is reported as model_file, not SGLang's model_path: sgl-model-gateway loads a tokenizer
// from model_path (an HF id or a tokenizer.json directory) and, given a GGUF path, tries HuggingFace and
// warns. The gateway needs no tokenizer to route HTTP requests.
http::HttpResponse OpenAiService::server_info(const http::HttpRequest&) const {
    const EngineStats stats = engine_.stats();
    const ModelConfig& config = model_.config;
    return json_response(
        {{"model_file", model_.path},
         {"served_model_name", settings_.served_model_name},
         {"architecture", config.architecture},
         {"max_model_len", config.context_length},
         {"vocab_size", config.vocab_size},
         {"kv_block_size", stats.kv_block_size},
         {"kv_blocks_total", stats.kv_blocks_total},
         {"max_total_tokens", stats.kv_blocks_total * stats.kv_block_size},
         {"kv_cache_dtype", settings_.kv_cache_dtype},
         {"kv_cache_bytes_per_token", settings_.kv_bytes_per_token},
         {"dp_size", 1},
         {"sampling_defaults", describe_sampling_defaults(settings_.sampling)},
         {"degeneration_guard", settings_.degeneration.describe()},
         {"disaggregation", settings_.disaggregation ? settings_.disaggregation->describe()
                                                     : nlohmann::json{{"disaggregation_mode", "null"}}},
         {"version", "tempered 0.1"}});
}

// SGLang's /model_info fields that sgl-model-gateway reads (model_type, architectures become worker
// labels); no model_path or tokenizer_path, for the reason server_info gives.
http::HttpResponse OpenAiService::model_info(const http::HttpRequest&) const {
    const ModelConfig& config = model_.config;
    return json_response({{"model_file", model_.path},
                          {"served_model_name", settings_.served_model_name},
                          {"is_generation", true},
                          {"model_type", config.architecture},
                          {"architectures", nlohmann::json::array({config.architecture})},
                          {"max_model_len", config.context_length},
                          {"vocab_size", config.vocab_size}});
}

// As SGLang answers it: 200 when flushed, 400 while requests run or wait (nothing is dropped then).
http::HttpResponse OpenAiService::flush_cache(const http::HttpRequest&) {
    const std::optional<CacheFlush> flush = engine_.flush_cache(kFlushCacheTimeout);
    if (!flush) return http::HttpResponse::text(503, "Cache not flushed: the engine did not answer in time.\n");
    if (!flush->flushed)
        return http::HttpResponse::text(
            400, "Cache not flushed: requests are running or waiting; the flush runs only when the engine is idle.\n");
    return http::HttpResponse::text(
        200, "Cache flushed: " + std::to_string(flush->blocks_dropped) + " cached blocks dropped.\n");
}

ResolvedSampling OpenAiService::resolve(const api::GenerationRequest& generation,
                                        const std::optional<std::string>& client) {
    ResolvedSampling sampling =
        resolve_sampling(api::to_sampling_values(generation.sampling), settings_.sampling, random_seed());
    metrics_.count_sampling_sources(sampling, client.value_or(""));
    if (sampling.temperature.value == 0) metrics_.count_greedy(client.value_or(""));
    return sampling;
}

std::optional<std::string> OpenAiService::client_of(const http::HttpRequest& request) const {
    return settings_.access ? settings_.access->client_of(request) : std::nullopt;
}

std::optional<api::ApiError> OpenAiService::check_model(const std::string& requested) const {
    if (!requested.empty() && requested != settings_.served_model_name) return api::model_not_found(requested);
    if (draining_) return api::service_unavailable("the server is shutting down", 5);
    return std::nullopt;
}

api::ApiResult<GenerationOptions> OpenAiService::generation_options(const api::GenerationRequest& generation,
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
    GenerationOptions options;
    options.prompt = std::move(prompt);
    options.n = generation.n;
    options.max_tokens = max_tokens;
    options.min_tokens = generation.min_tokens.value_or(0);
    options.ignore_eos = generation.ignore_eos;
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

std::optional<api::ApiError> OpenAiService::attach_disaggregation(const api::GenerationRequest& generation,
                                                                  size_t prompt, size_t prompts,
                                                                  GenerationOptions& options) const {
    if (!settings_.disaggregation) return std::nullopt;
    return settings_.disaggregation->attach(generation.bootstrap, prompt, prompts, generation.n, options);
}

api::ApiResult<std::shared_ptr<GenerationStream>> OpenAiService::submit(GenerationOptions options) {
    SubmitResult result = engine_.submit(std::move(options));
    if (result.stream) return result.stream;
    if (*result.refusal == SubmitRefusal::QueueFull) {
        metrics_.count_rejected();
        return api::rate_limited("too many requests are waiting; retry shortly", 1);
    }
    return api::service_unavailable("the server is shutting down", 5);
}

api::ApiResult<std::shared_ptr<const grammar::Constraint>> OpenAiService::response_constraint(
    const api::GenerationRequest& generation) {
    auto constraint = structured_output_.constraint_for(generation.response_format);
    if (constraint && *constraint)
        metrics_.count_structured(api::response_format_kind_name(generation.response_format.kind));
    return constraint;
}

api::ApiResult<std::shared_ptr<const grammar::Constraint>> OpenAiService::output_constraint(
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

GenerationJob OpenAiService::generation_job(const char* endpoint, const http::HttpRequest& http_request,
                                            const api::GenerationRequest& generation, const ResolvedSampling& sampling,
                                            const std::string& response_id,
                                            std::chrono::steady_clock::time_point received) const {
    GenerationJob job;
    job.streams = std::make_shared<StreamSet>();
    job.stream = generation.stream;
    job.include_usage = generation.stream && generation.stream_options.include_usage;
    job.report_sampling = settings_.report_sampling;
    job.sampling = sampling.to_json();
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
