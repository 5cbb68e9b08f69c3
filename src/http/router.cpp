#include "http/router.h"

#include <algorithm>

namespace tempered::http {
namespace {

// "/a/b/" -> {"a", "b", ""}: a trailing slash is a distinct (empty) last segment.
std::vector<std::string_view> split_path(std::string_view path) {
    std::vector<std::string_view> parts;
    if (!path.empty() && path.front() == '/') path.remove_prefix(1);
    size_t start = 0;
    while (true) {
        const size_t slash = path.find('/', start);
        parts.push_back(path.substr(start, slash == std::string_view::npos ? slash : slash - start));
        if (slash == std::string_view::npos) break;
        start = slash + 1;
    }
    return parts;
}

}  // namespace

void Router::add(std::string method, std::string_view pattern, HttpHandler handler, HttpGuard guard) {
    Route route{std::move(method), {}, std::move(handler), std::move(guard)};
    for (const std::string_view part : split_path(pattern)) {
        const bool is_param = part.size() > 2 && part.front() == '{' && part.back() == '}';
        route.segments.push_back({std::string(is_param ? part.substr(1, part.size() - 2) : part), is_param});
    }
    routes_.push_back(std::move(route));
}

bool Router::match_segments(const Route& route, const std::vector<std::string_view>& parts,
                            std::map<std::string, std::string>& params) {
    if (route.segments.size() != parts.size()) return false;
    for (size_t i = 0; i < parts.size(); ++i) {
        const Segment& segment = route.segments[i];
        if (segment.is_param) {
            if (parts[i].empty()) return false;
            params[segment.text] = std::string(parts[i]);
        } else if (segment.text != parts[i]) {
            return false;
        }
    }
    return true;
}

Router::Match Router::match(std::string_view method, std::string_view path) const {
    const std::vector<std::string_view> parts = split_path(path);
    const std::string_view route_method = method == "HEAD" ? std::string_view("GET") : method;
    Match result;
    for (const Route& route : routes_) {
        std::map<std::string, std::string> params;
        if (!match_segments(route, parts, params)) continue;
        if (route.method == route_method) {
            result.outcome = Outcome::Matched;
            result.handler = &route.handler;
            result.guard = &route.guard;
            result.path_params = std::move(params);
            result.allowed_methods.clear();
            return result;
        }
        result.outcome = Outcome::MethodNotAllowed;
        if (std::find(result.allowed_methods.begin(), result.allowed_methods.end(), route.method) ==
            result.allowed_methods.end()) {
            result.allowed_methods.push_back(route.method);
        }
    }
    return result;
}

}  // namespace tempered::http
