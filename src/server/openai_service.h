// The OpenAI-compatible endpoints over one engine and one model: parse and validate (src/api), render
// the chat template and tokenize, resolve sampling (src/sampling), submit to the engine, and answer
// whole or as an SSE stream. Also the operational endpoints: health, models, tokenize, metrics, load.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "api/chat_request.h"
#include "api/completion_request.h"
#include "api/responses.h"
#include "chat/chat_template.h"
#include "edge/access_control.h"
#include "edge/guarded_routes.h"
#include "edge/request_limits.h"
#include "edge/request_log.h"
#include "engine/engine.h"
#include "http/http_server.h"
#include "models/model_config.h"
#include "sampling/sampling_resolution.h"
#include "server/chat_reasoning.h"
#include "server/chat_tool_calls.h"
#include "server/disaggregation.h"
#include "server/dry_breaker_cache.h"
#include "server/generation_loop.h"
#include "server/serving_metrics.h"
#include "server/stream_set.h"
#include "server/structured_output.h"
#include "settings/degeneration_settings.h"
#include "tokenizer/tokenizer.h"

namespace tempered {

// What the service needs of the model it serves (which outlives it): the tokenizer, the shape, the
// file and its chat template. The engine holds the model itself.
struct ServedModel {
    const Tokenizer& tokenizer;
    const ModelConfig& config;
    std::string path;           // for /server_info
    std::string chat_template;  // "" when the file has none
};

struct ServiceSettings {
    std::string served_model_name;
    SamplingDefaultsConfig sampling;
    bool report_sampling = true;
    int64_t created = 0;                 // Unix time the model was loaded, for /v1/models
    std::string kv_cache_dtype = "f16";  // --kv-cache-dtype's spelling, for /v1/models and /server_info
    int64_t kv_bytes_per_token = 0;      // KvCacheShape::bytes_per_token, for /server_info
    // --tool-call-parser: a family name (toolcalls/tool_call_parser.h), "auto" (from the chat template)
    // or "none"; --tool-call-validation.
    std::string tool_call_parser = "auto";
    ToolCallValidation tool_call_validation = ToolCallValidation::Constrain;
    // --degeneration-guard: loop detection for every request that does not send repetition_detection.
    DegenerationGuardSettings degeneration;
    // --reasoning-parser, --reasoning-budget, --reasoning-effort-budgets (settings/reasoning_settings.h).
    ReasoningSettings reasoning;
    // --disaggregation-mode and its transfer (outlives the service); nullptr: one server does everything.
    const Disaggregation* disaggregation = nullptr;
    // Who sent a request, for the request log and the per-client counters (outlives the service);
    // nullptr: clients are not named.
    const AccessControl* access = nullptr;
    // --max-tokens-limit, --max-prompt-tokens, --max-request-tokens, --request-timeout.
    RequestLimits limits;
};

// How long /health_generate waits for its one token before it calls the engine stuck.
inline constexpr std::chrono::seconds kHealthGenerateTimeout{20};
// How long /flush_cache waits for the engine thread to get between two steps.
inline constexpr std::chrono::seconds kFlushCacheTimeout{10};

class OpenAiService {
public:
    OpenAiService(ServedModel model, Engine& engine, ServingMetrics& metrics, RequestLog& log,
                  ServiceSettings settings);

    // Through `server`, every endpoint sits behind the API-key check and CORS (guarded_routes.h).
    void register_routes(GuardedRoutes& server);
    // Draining: /health answers 503 and new generation requests are refused.
    void begin_drain() { draining_ = true; }

private:
    // A completions request's prompts: token ids for the engine, text for echo.
    struct CompletionPrompts {
        std::vector<std::vector<int32_t>> tokens;
        std::vector<std::string> texts;
    };

    http::HttpResponse chat(const http::HttpRequest& request);
    http::HttpResponse completions(const http::HttpRequest& request);
    http::HttpResponse models(const http::HttpRequest& request) const;
    http::HttpResponse model(const http::HttpRequest& request) const;
    http::HttpResponse health(const http::HttpRequest& request) const;
    http::HttpResponse health_generate(const http::HttpRequest& request);
    http::HttpResponse tokenize(const http::HttpRequest& request) const;
    http::HttpResponse detokenize(const http::HttpRequest& request) const;
    http::HttpResponse get_load(const http::HttpRequest& request) const;
    http::HttpResponse metrics(const http::HttpRequest& request) const;
    http::HttpResponse server_info(const http::HttpRequest& request) const;
    http::HttpResponse model_info(const http::HttpRequest& request) const;
    http::HttpResponse flush_cache(const http::HttpRequest& request);

    nlohmann::json model_card() const;
    // The sampling values for `generation`, resolved and counted under the request's client.
    ResolvedSampling resolve(const api::GenerationRequest& generation, const std::optional<std::string>& client);
    // The request's client label (access_control.h), or nullopt when the server names no clients.
    std::optional<std::string> client_of(const http::HttpRequest& request) const;
    // Checks the model name and the context length; fills the engine's options.
    std::optional<api::ApiError> check_model(const std::string& requested) const;
    api::ApiResult<GenerationOptions> generation_options(const api::GenerationRequest& generation,
                                                         std::vector<int32_t> prompt, int top_logprobs,
                                                         const ResolvedSampling& sampling, const char* prompt_param,
                                                         std::optional<int64_t> default_max_tokens,
                                                         size_t prompts = 1) const;
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
    // What every generation request's loop needs from the request: streaming, the request id, sampling.
    GenerationJob generation_job(const char* endpoint, const http::HttpRequest& http_request,
                                 const api::GenerationRequest& generation, const ResolvedSampling& sampling,
                                 const std::string& response_id, std::chrono::steady_clock::time_point received) const;

    // Chat: the messages through the chat template, tokenized.
    api::ApiResult<std::vector<int32_t>> chat_prompt(const api::ChatRequest& request) const;
    // Completions: the checks that need the model, the prompts, and their submission (or, for
    // max_tokens 0, their scoring only) into `streams`.
    std::optional<api::ApiError> check_completion_request(const api::CompletionRequest& request) const;
    CompletionPrompts completion_prompts(const api::CompletionRequest& request) const;
    std::optional<api::ApiError> submit_prompts(const api::CompletionRequest& request, const CompletionPrompts& prompts,
                                                const ResolvedSampling& sampling, bool score_only, StreamSet& streams);

    ServedModel model_;
    // Parsed once, here, not per request; the error a chat request gets when there is none to use.
    api::ApiResult<ChatTemplate> chat_template_;
    Engine& engine_;
    ServingMetrics& metrics_;
    RequestLog& log_;
    ServiceSettings settings_;
    ToolCallSettings tool_calls_;  // the parser chosen for this model, and the validation mode
    ReasoningSetup reasoning_;     // the reasoning parser chosen for this model (none: content only)
    std::string system_fingerprint_;
    StructuredOutput structured_output_;
    mutable DryBreakerCache dry_breakers_;  // filled as requests name lists; generation_options() is const
    std::atomic<bool> draining_{false};
};

}  // namespace tempered
