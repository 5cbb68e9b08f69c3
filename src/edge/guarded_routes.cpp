#include "edge/guarded_routes.h"

#include <algorithm>

namespace tempered {

void GuardedRoutes::route(std::string method, std::string_view path_pattern, http::HttpHandler handler,
                          api::ErrorEnvelope envelope) {
    auto known = std::find_if(methods_by_path_.begin(), methods_by_path_.end(),
                              [&](const auto& entry) { return entry.first == path_pattern; });
    if (known == methods_by_path_.end()) known = methods_by_path_.insert(known, {std::string(path_pattern), {}});
    known->second.push_back(method);

    // The key is checked on the headers, before the body is read; refused, the endpoint never runs, so
    // nothing is submitted or counted.
    http::HttpGuard key_check;
    if (access_.requires_key(path_pattern))
        key_check = [&access = access_, &cors = cors_, envelope](const http::HttpRequest& request) {
            std::optional<http::HttpResponse> answer;
            if (std::optional<api::ApiError> refused = access.check(request)) {
                answer = unauthorized_response(*refused, envelope);
                cors.decorate(request, *answer);
            }
            return answer;
        };
    server_.route(
        std::move(method), path_pattern,
        [&cors = cors_, handler = std::move(handler)](const http::HttpRequest& request) {
            http::HttpResponse response = handler(request);
            cors.decorate(request, response);
            return response;
        },
        std::move(key_check));
}

void GuardedRoutes::page(std::string_view path_pattern, http::HttpHandler handler) {
    methods_by_path_.push_back({std::string(path_pattern), {"GET"}});
    server_.route("GET", path_pattern, [&cors = cors_, handler = std::move(handler)](const http::HttpRequest& request) {
        http::HttpResponse response = handler(request);
        cors.decorate(request, response);
        return response;
    });
}

void GuardedRoutes::add_preflight_routes() {
    if (!cors_.enabled()) return;
    for (const auto& [path, methods] : methods_by_path_)
        server_.route("OPTIONS", path, [&cors = cors_, allowed = methods](const http::HttpRequest& request) {
            return cors.preflight(request, allowed);
        });
}

}  // namespace tempered
