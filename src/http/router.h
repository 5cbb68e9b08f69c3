// Method + path-pattern routing, independent of the HTTP library. A pattern is a path whose segments
// are literals or `{name}` placeholders that match exactly one non-empty segment:
// "/v1/models/{model}" matches "/v1/models/llama" with path_params {"model": "llama"}.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "http/http_types.h"

namespace tempered::http {

class Router {
public:
    // Routes are tried in the order they were added; the first match wins.
    void add(std::string method, std::string_view pattern, HttpHandler handler, HttpGuard guard = {});

    enum class Outcome { Matched, NotFound, MethodNotAllowed };
    struct Match {
        Outcome outcome = Outcome::NotFound;
        const HttpHandler* handler = nullptr;  // set when Matched
        const HttpGuard* guard = nullptr;      // set when Matched (it may be empty)
        std::map<std::string, std::string> path_params;
        std::vector<std::string> allowed_methods;  // set when MethodNotAllowed
    };
    // HEAD is served by the GET route of the same path.
    Match match(std::string_view method, std::string_view path) const;

private:
    struct Segment {
        std::string text;
        bool is_param = false;
    };
    struct Route {
        std::string method;
        std::vector<Segment> segments;
        HttpHandler handler;
        HttpGuard guard;
    };
    static bool match_segments(const Route& route, const std::vector<std::string_view>& parts,
                               std::map<std::string, std::string>& params);

    std::vector<Route> routes_;
};

}  // namespace tempered::http
