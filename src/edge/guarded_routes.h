// The server's routes as a client meets them: each handler behind the API-key check its path needs
// (access_control.h), its answers (401s and streams included) carrying the CORS headers (cors.h), and,
// with CORS on, an OPTIONS route per path that answers a browser's preflight without a key. Endpoints
// register here instead of on the HttpServer, so no endpoint checks keys or origins itself.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "edge/access_control.h"
#include "edge/cors.h"
#include "http/http_server.h"

namespace tempered {

class GuardedRoutes {
public:
    // Both policies outlive the server's handlers.
    GuardedRoutes(http::HttpServer& server, const AccessControl& access, const CorsPolicy& cors)
        : server_(server), access_(access), cors_(cors) {}

    // `envelope`: how the key check's 401 reads (the Messages API's routes answer in Anthropic's).
    void route(std::string method, std::string_view path_pattern, http::HttpHandler handler,
               api::ErrorEnvelope envelope = api::ErrorEnvelope::OpenAI);
    // A GET route a browser navigates to (the web UI's page and assets): never behind a key, since a
    // navigation carries no Authorization header and the page holds no data; CORS as every route.
    void page(std::string_view path_pattern, http::HttpHandler handler);
    // Once every route is in: one OPTIONS route per path for preflights (none while CORS is off).
    void add_preflight_routes();

private:
    http::HttpServer& server_;
    const AccessControl& access_;
    const CorsPolicy& cors_;
    // Each path's methods, in the order the paths were first registered.
    std::vector<std::pair<std::string, std::vector<std::string>>> methods_by_path_;
};

}  // namespace tempered
