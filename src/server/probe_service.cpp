#include "server/probe_service.h"

#include <filesystem>

namespace tempered {

void ProbeService::register_routes(GuardedRoutes& routes) {
    auto bind = [this](auto method) {
        return [this, method](const http::HttpRequest& request) { return (this->*method)(request); };
    };
    add_route(routes, "GET", "/health", bind(&ProbeService::health));
    add_route(routes, "GET", "/ready", bind(&ProbeService::ready));
    add_route(routes, "GET", "/get_load", bind(&ProbeService::get_load));
    add_route(routes, "GET", "/health_generate", bind(&ProbeService::health_generate));
    add_route(routes, "GET", "/server_info", bind(&ProbeService::server_info));
    add_route(routes, "GET", "/model_info", bind(&ProbeService::model_info));
    // SGLang's names, which sgl-model-gateway probes at registration.
    add_route(routes, "GET", "/get_server_info", bind(&ProbeService::server_info));
    add_route(routes, "GET", "/get_model_info", bind(&ProbeService::model_info));
    // sgl-model-gateway's own /flush_cache POSTs here on every worker; SGLang takes GET too.
    add_route(routes, "POST", "/flush_cache", bind(&ProbeService::flush_cache));
    add_route(routes, "GET", "/flush_cache", bind(&ProbeService::flush_cache));
    add_route(routes, "GET", "/metrics", bind(&ProbeService::metrics));
}

http::HttpResponse ProbeService::health(const http::HttpRequest&) const {
    if (path_.draining()) return json_response({{"status", "draining"}}, 503);
    return json_response({{"status", "ok"}});
}

// Readiness, apart from liveness: 200 while a request would be taken and could be answered; 503 while
// draining or, in upstream mode, while the upstream does not answer (with the reason).
http::HttpResponse ProbeService::ready(const http::HttpRequest&) const {
    if (path_.draining()) return json_response({{"status", "draining"}}, 503);
    if (auto reason = path_.generator().not_ready())
        return json_response({{"status", "unavailable"}, {"reason", *reason}}, 503);
    return json_response({{"status", "ready"}});
}

// SGLang's deeper probe: /health says the process answers, this says the engine still generates. One greedy
// token from a one-token prompt, through the same queue as every request (so a full queue is a 503 too).
http::HttpResponse ProbeService::health_generate(const http::HttpRequest&) const {
    const ServedModel& model = path_.model();
    if (path_.draining()) return json_response({{"status", "draining"}}, 503);
    GenerationOptions options;
    options.prompt = model.tokenizer.encode("ping", /*add_special_tokens=*/true, /*parse_special=*/false);
    options.prompt.resize(1);
    options.max_tokens = 1;
    options.sampling.temperature = 0.0f;
    SubmitResult submitted = path_.generator().submit(std::move(options));
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

http::HttpResponse ProbeService::metrics(const http::HttpRequest&) const {
    return http::HttpResponse::text(200, path_.metrics().render(), std::string(metrics::Registry::kContentType));
}

// sgl-model-gateway's load-aware policies read only num_tokens (summed over the array's DP ranks), as
// SGLang counts it: tokens the running requests hold in the KV cache plus the prompts still waiting.
http::HttpResponse ProbeService::get_load(const http::HttpRequest&) const {
    const EngineStats stats = path_.generator().stats();
    return json_response(nlohmann::json::array({{{"dp_rank", 0},
                                                 {"num_reqs", stats.running_requests + stats.waiting_requests},
                                                 {"num_waiting_reqs", stats.waiting_requests},
                                                 {"num_tokens", stats.tokens_in_kv + stats.waiting_prompt_tokens}}}));
}

// The file's name alone: the probes answer without a key, and a path tells who runs the server and where (a
// home directory); routers need none of it.
namespace {
std::string model_file_name(const std::string& path) { return std::filesystem::path(path).filename().string(); }
}  // namespace

// The GGUF file is reported as model_file, not SGLang's model_path: sgl-model-gateway loads a tokenizer
// from model_path (an HF id or a tokenizer.json directory) and, given a GGUF path, tries HuggingFace and
// warns. The gateway needs no tokenizer to route HTTP requests.
http::HttpResponse ProbeService::server_info(const http::HttpRequest&) const {
    const ServedModel& model = path_.model();
    const ServiceSettings& settings = path_.settings();
    const EngineStats stats = path_.generator().stats();
    const ModelConfig& config = model.config;
    return json_response({{"model_file", model_file_name(model.path)},
                          {"served_model_name", settings.served_model_name},
                          {"architecture", config.architecture},
                          {"max_model_len", config.context_length},
                          {"vocab_size", config.vocab_size},
                          {"kv_block_size", stats.kv_block_size},
                          {"kv_blocks_total", stats.kv_blocks_total},
                          {"max_total_tokens", stats.kv_blocks_total * stats.kv_block_size},
                          {"kv_cache_dtype", settings.kv_cache_dtype},
                          {"kv_cache_bytes_per_token", settings.kv_bytes_per_token},
                          {"dp_size", 1},
                          {"sampling_defaults", describe_sampling_defaults(settings.sampling)},
                          {"degeneration_guard", settings.degeneration.describe()},
                          {"disaggregation", settings.disaggregation ? settings.disaggregation->describe()
                                                                     : nlohmann::json{{"disaggregation_mode", "null"}}},
                          {"version", "tempered 0.1"}});
}

// SGLang's /model_info fields that sgl-model-gateway reads (model_type, architectures become worker
// labels); no model_path or tokenizer_path, for the reason server_info gives.
http::HttpResponse ProbeService::model_info(const http::HttpRequest&) const {
    const ServedModel& model = path_.model();
    const ServiceSettings& settings = path_.settings();
    const ModelConfig& config = model.config;
    return json_response({{"model_file", model_file_name(model.path)},
                          {"served_model_name", settings.served_model_name},
                          {"is_generation", true},
                          {"model_type", config.architecture},
                          {"architectures", nlohmann::json::array({config.architecture})},
                          {"max_model_len", config.context_length},
                          {"vocab_size", config.vocab_size}});
}

// As SGLang answers it: 200 when flushed, 400 while requests run or wait (nothing is dropped then).
http::HttpResponse ProbeService::flush_cache(const http::HttpRequest&) const {
    const std::optional<CacheFlush> flush = path_.generator().flush_cache(kFlushCacheTimeout);
    if (!flush) return http::HttpResponse::text(503, "Cache not flushed: the engine did not answer in time.\n");
    if (!flush->flushed)
        return http::HttpResponse::text(
            400, "Cache not flushed: requests are running or waiting; the flush runs only when the engine is idle.\n");
    return http::HttpResponse::text(
        200, "Cache flushed: " + std::to_string(flush->blocks_dropped) + " cached blocks dropped.\n");
}

}  // namespace tempered
