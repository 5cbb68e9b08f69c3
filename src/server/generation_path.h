// What every endpoint service shares: the served model, the generator (engine/generator.h: our engine, or
// another engine upstream), the metrics and the request log, and the one path from a parsed request to a
// generation and its answer (check the model name, resolve sampling, fill the generation's options, choose
// the grammar, submit, run the generation loop). The services (chat_service, completion_service,
// model_service, probe_service) are thin handlers over it.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/errors.h"
#include "api/generation_request.h"
#include "edge/guarded_routes.h"
#include "edge/request_log.h"
#include "engine/generator.h"
#include "http/http_types.h"
#include "sampling/sampling_resolution.h"
#include "server/chat_renderer.h"
#include "server/chat_tool_calls.h"
#include "server/dry_breaker_cache.h"
#include "server/generation_loop.h"
#include "server/service_settings.h"
#include "server/serving_metrics.h"
#include "server/structured_output.h"

namespace tempered {

// A JSON body with `status`.
http::HttpResponse json_response(const nlohmann::json& body, int status = 200);

// Registers `handler` behind the edge's checks (guarded_routes.h). Every response echoes the client's
// X-Request-Id, errors included, so logs on both sides join up.
void add_route(GuardedRoutes& routes, std::string method, std::string_view path, http::HttpHandler handler,
               api::ErrorEnvelope envelope = api::ErrorEnvelope::OpenAI);

class GenerationPath {
public:
    GenerationPath(ServedModel model, Generator& generator, ServingMetrics& metrics, RequestLog& log,
                   ServiceSettings settings);

    const ServedModel& model() const { return model_; }
    const ServiceSettings& settings() const { return settings_; }
    Generator& generator() const { return generator_; }
    ServingMetrics& metrics() const { return metrics_; }
    RequestLog& log() const { return log_; }
    const std::string& system_fingerprint() const { return system_fingerprint_; }
    const ChatRenderer& chat_renderer() const { return chat_renderer_; }

    // Draining: /health answers 503 and new generation requests are refused.
    void begin_drain() { draining_ = true; }
    bool draining() const { return draining_; }

    // The sampling values for `generation`, resolved and counted under the request's client.
    ResolvedSampling resolve(const api::GenerationRequest& generation, const std::optional<std::string>& client);
    // The request's client label (edge/access_control.h), or nullopt when the server names no clients.
    std::optional<std::string> client_of(const http::HttpRequest& request) const;
    // Checks the model name, and that the server is not draining.
    std::optional<api::ApiError> check_model(const std::string& requested) const;
    // A passthrough front without a model of its own (ServedModel::has_model): `what` needs one, as a 400.
    std::optional<api::ApiError> needs_own_model(const std::string& what) const;
    // The token ids a request may name (logit_bias); any, when the ids are the upstream's to check.
    api::ModelLimits request_limits() const;
    // Checks the prompt and max_tokens against the limits and the context; fills the engine's options.
    api::ApiResult<GenerationOptions> generation_options(const api::GenerationRequest& generation,
                                                         std::vector<int32_t> prompt, int top_logprobs,
                                                         const ResolvedSampling& sampling, const char* prompt_param,
                                                         std::optional<int64_t> default_max_tokens,
                                                         size_t prompts = 1) const;
    // Passthrough (chat_passthrough.h): the same options with no prompt here (the upstream renders it), so no
    // prompt or context checks; max_tokens as the request or a limit says, else the upstream's own default.
    api::ApiResult<GenerationOptions> passthrough_options(const api::GenerationRequest& generation,
                                                          const ResolvedSampling& sampling) const;
    api::ApiResult<std::shared_ptr<GenerationStream>> submit(GenerationOptions options);
    // Prefill/decode disaggregation: prompt `prompt` of `prompts` gets its part of the KV transfer.
    std::optional<api::ApiError> attach_disaggregation(const api::GenerationRequest& generation, size_t prompt,
                                                       size_t prompts, GenerationOptions& options) const;
    // The choices a prompt of `generation` gets here (one on the prefill side of a transfer).
    int choices_here(const api::GenerationRequest& generation) const {
        return settings_.disaggregation ? settings_.disaggregation->choices(generation.bootstrap, generation.n)
                                        : generation.n;
    }
    // The grammar `generation.response_format` asks for (nullptr: none), counted by kind.
    api::ApiResult<std::shared_ptr<const grammar::Constraint>> response_constraint(
        const api::GenerationRequest& generation);
    // A chat answer's grammar: the tool-call grammar when tool_choice forces calls (it wins over
    // response_format), else response_format's, else the lazy tool-call grammar of tool_choice auto.
    api::ApiResult<std::shared_ptr<const grammar::Constraint>> output_constraint(
        const api::GenerationRequest& generation, const std::optional<ToolCallSetup>& tools);
    // A grammar that applies from the first token needs max_tokens to hold its shortest sentence (a 400 naming
    // max_tokens otherwise); within it, an answer is closed early rather than cut (engine/grammar_closing.h).
    std::optional<api::ApiError> check_grammar_room(const GenerationOptions& options) const;
    // What every generation request's loop needs from the request: streaming, the request id, sampling.
    GenerationJob generation_job(const char* endpoint, const http::HttpRequest& http_request,
                                 const api::GenerationRequest& generation, const ResolvedSampling& sampling,
                                 const std::string& response_id, std::chrono::steady_clock::time_point received) const;
    // Answers `request` with the job's generation (generation_loop.h).
    http::HttpResponse answer(GenerationJob job, const http::HttpRequest& request) const {
        return run_generation(std::move(job), request, metrics_, log_);
    }

private:
    // The options every generation shares, once its prompt and max_tokens are settled.
    GenerationOptions filled_options(const api::GenerationRequest& generation, std::vector<int32_t> prompt,
                                     int64_t max_tokens, int top_logprobs, const ResolvedSampling& sampling) const;
    void mark_unapplied(const ResolvedSampling& sampling, nlohmann::json& report) const;

    ServedModel model_;
    Generator& generator_;
    ServingMetrics& metrics_;
    RequestLog& log_;
    ServiceSettings settings_;
    std::string system_fingerprint_;
    StructuredOutput structured_output_;
    ChatRenderer chat_renderer_;
    mutable DryBreakerCache dry_breakers_;  // filled as requests name lists; generation_options() is const
    std::atomic<bool> draining_{false};
};

}  // namespace tempered
