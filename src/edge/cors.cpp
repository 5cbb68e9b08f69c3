#include "edge/cors.h"

#include <algorithm>
#include <cctype>

namespace tempered {
namespace {

// The headers a browser client of this API sends beyond the always-allowed ones.
constexpr std::string_view kAllowedHeaders = "Authorization, Content-Type, X-Request-Id";
// A requested header list is echoed only when it is plainly a list of header names, and not huge.
constexpr size_t kMaxRequestedHeadersBytes = 1024;

std::string_view trim_spaces(std::string_view text) {
    while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
    while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
    return text;
}

// scheme://host[:port], as a browser sends Origin: no path, no trailing slash, no spaces.
bool valid_origin(std::string_view origin) {
    const size_t scheme_end = origin.find("://");
    if (scheme_end == std::string_view::npos || scheme_end == 0 || scheme_end + 3 >= origin.size()) return false;
    const std::string_view host = origin.substr(scheme_end + 3);
    return std::none_of(host.begin(), host.end(), [](char c) { return c == '/' || c <= 0x20 || c >= 0x7f; });
}

bool plain_header_list(std::string_view requested) {
    if (requested.size() > kMaxRequestedHeadersBytes) return false;
    return std::all_of(requested.begin(), requested.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == ',' || c == ' ';
    });
}

std::string join(const std::vector<std::string>& items) {
    std::string joined;
    for (const std::string& item : items) joined += (joined.empty() ? "" : ", ") + item;
    return joined;
}

}  // namespace

Result<CorsPolicy> CorsPolicy::parse(std::string_view allowed_origins) {
    CorsPolicy policy;
    while (!allowed_origins.empty()) {
        const size_t comma = std::min(allowed_origins.find(','), allowed_origins.size());
        const std::string_view origin = trim_spaces(allowed_origins.substr(0, comma));
        allowed_origins.remove_prefix(std::min(comma + 1, allowed_origins.size()));
        if (origin == "*") {
            policy.any_origin_ = true;
        } else if (valid_origin(origin)) {
            policy.origins_.emplace_back(origin);
        } else {
            return Error{"--allowed-origins: '" + std::string(origin) +
                         "' is not * or an origin such as https://app.example.com (scheme://host[:port], no path)"};
        }
    }
    return policy;
}

std::optional<std::string> CorsPolicy::allow_origin(std::string_view origin) const {
    if (origin.empty()) return std::nullopt;  // not a cross-origin browser request
    if (any_origin_) return "*";
    // Origins compare exactly, as browsers send them (RFC 6454 serialization: lowercase scheme and host).
    if (std::find(origins_.begin(), origins_.end(), origin) != origins_.end()) return std::string(origin);
    return std::nullopt;
}

void CorsPolicy::decorate(const http::HttpRequest& request, http::HttpResponse& response) const {
    if (!enabled()) return;
    // The answer depends on Origin whenever origins are listed, even for a request it refuses: caches must know.
    if (!any_origin_) response.headers.emplace("Vary", "Origin");
    const std::optional<std::string> allowed = allow_origin(request.header("Origin"));
    if (!allowed) return;
    response.headers.emplace("Access-Control-Allow-Origin", *allowed);
    response.headers.emplace("Access-Control-Expose-Headers", "X-Request-Id");
}

http::HttpResponse CorsPolicy::preflight(const http::HttpRequest& request,
                                         const std::vector<std::string>& methods) const {
    http::HttpResponse response = http::HttpResponse::text(204, "");
    std::vector<std::string> allow = methods;
    allow.emplace_back("OPTIONS");
    response.headers.emplace("Allow", join(allow));
    decorate(request, response);
    if (!response.headers.count("Access-Control-Allow-Origin")) return response;
    response.headers.emplace("Access-Control-Allow-Methods", join(allow));
    std::string headers(kAllowedHeaders);
    const std::string requested = request.header("Access-Control-Request-Headers");
    if (!trim_spaces(requested).empty() && plain_header_list(requested))
        headers += ", " + std::string(trim_spaces(requested));
    response.headers.emplace("Access-Control-Allow-Headers", headers);
    response.headers.emplace("Access-Control-Max-Age", std::to_string(kMaxAgeSeconds));
    return response;
}

}  // namespace tempered
