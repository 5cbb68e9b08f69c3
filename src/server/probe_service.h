// The operational endpoints that routers, gateways and orchestrators probe: /health (503 while draining),
// /ready (503 too while an upstream does not answer),
// /health_generate (one token through the engine), /get_load, /server_info and /model_info (also under
// SGLang's /get_* names), /flush_cache and /metrics.
#pragma once

#include <chrono>

#include "edge/guarded_routes.h"
#include "http/http_types.h"
#include "server/generation_path.h"

namespace tempered {

// How long /health_generate waits for its one token before it calls the engine stuck.
inline constexpr std::chrono::seconds kHealthGenerateTimeout{20};
// How long /flush_cache waits for the engine thread to get between two steps.
inline constexpr std::chrono::seconds kFlushCacheTimeout{10};

class ProbeService {
public:
    // `path` outlives the service; its draining flag is the one /health reports.
    explicit ProbeService(const GenerationPath& path) : path_(path) {}

    void register_routes(GuardedRoutes& routes);

private:
    http::HttpResponse health(const http::HttpRequest& request) const;
    http::HttpResponse ready(const http::HttpRequest& request) const;
    http::HttpResponse health_generate(const http::HttpRequest& request) const;
    http::HttpResponse get_load(const http::HttpRequest& request) const;
    http::HttpResponse metrics(const http::HttpRequest& request) const;
    http::HttpResponse server_info(const http::HttpRequest& request) const;
    http::HttpResponse model_info(const http::HttpRequest& request) const;
    http::HttpResponse flush_cache(const http::HttpRequest& request) const;

    const GenerationPath& path_;
};

}  // namespace tempered
