// The OpenAI-compatible endpoints over one engine and one model: parse and validate (src/api), render
// the chat template and tokenize, resolve sampling (src/sampling), submit to the engine, and answer
// whole or as an SSE stream. Also the operational endpoints: health, models, tokenize, metrics, load.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "api/chat_request.h"
#include "api/completion_request.h"
#include "api/responses.h"
#include "runtime/loaded_model.h"
#include "engine/engine.h"
#include "http/http_server.h"
#include "sampling/sampling_resolution.h"
#include "server/request_log.h"
#include "server/serving_metrics.h"

namespace tempered {

struct ServiceSettings {
    std::string served_model_name;
    SamplingDefaultsConfig sampling;
    bool report_sampling = true;
    int64_t created = 0;  // Unix time the model was loaded, for /v1/models
};

class OpenAiService {
public:
    OpenAiService(LoadedModel& model, Engine& engine, ServingMetrics& metrics, RequestLog& log,
                  ServiceSettings settings);

    void register_routes(http::HttpServer& server);
    // Draining: /health answers 503 and new generation requests are refused.
    void begin_drain() { draining_ = true; }

private:
    struct Submission;  // a request accepted by the engine, with what the response needs

    http::HttpResponse chat(const http::HttpRequest& request);
    http::HttpResponse completions(const http::HttpRequest& request);
    http::HttpResponse models(const http::HttpRequest& request) const;
    http::HttpResponse model(const http::HttpRequest& request) const;
    http::HttpResponse health(const http::HttpRequest& request) const;
    http::HttpResponse tokenize(const http::HttpRequest& request) const;
    http::HttpResponse detokenize(const http::HttpRequest& request) const;
    http::HttpResponse get_load(const http::HttpRequest& request) const;
    http::HttpResponse metrics(const http::HttpRequest& request) const;
    http::HttpResponse server_info(const http::HttpRequest& request) const;

    nlohmann::json model_card() const;
    // The sampling values for `generation`, resolved and counted.
    ResolvedSampling resolve(const api::GenerationRequest& generation);
    // Checks the model name and the context length; fills the engine's options.
    std::optional<api::ApiError> check_model(const std::string& requested) const;
    api::ApiResult<GenerationOptions> generation_options(const api::GenerationRequest& generation,
                                                         std::vector<int32_t> prompt, int top_logprobs,
                                                         const ResolvedSampling& sampling, const char* prompt_param,
                                                         std::optional<int64_t> default_max_tokens) const;
    api::ApiResult<std::shared_ptr<GenerationStream>> submit(GenerationOptions options);
    api::TokenLogprob to_api_logprob(const TokenLogprob& logprob) const;

    LoadedModel& model_;
    Engine& engine_;
    ServingMetrics& metrics_;
    RequestLog& log_;
    ServiceSettings settings_;
    std::string system_fingerprint_;
    std::atomic<bool> draining_{false};
};

}  // namespace tempered
