// Cross-origin requests from browser pages (--allowed-origins). Off by default: no response carries an
// Access-Control-* header and an OPTIONS request gets the router's 405 with its Allow header. On, a
// request whose Origin is allowed gets Access-Control-Allow-Origin (its origin echoed with Vary: Origin,
// or "*" when any origin is allowed), and a preflight OPTIONS on a served path gets 204 with the path's
// methods and the headers a client may send; a disallowed origin gets no CORS header, so the browser
// blocks the page's request. A preflight needs no API key: browsers never send one with it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "http/http_types.h"

namespace tempered {

class CorsPolicy {
public:
    // How long a browser may reuse a preflight's answer (browsers cap it: Chromium at 2 hours).
    static constexpr int kMaxAgeSeconds = 600;

    CorsPolicy() = default;  // off
    // "" (off), "*" (any origin) or a comma-separated list of origins such as "https://app.example.com".
    static Result<CorsPolicy> parse(std::string_view allowed_origins);

    bool enabled() const { return any_origin_ || !origins_.empty(); }
    // The Access-Control-Allow-Origin value for a request from `origin` ("" when it sent none), or nullopt.
    std::optional<std::string> allow_origin(std::string_view origin) const;
    // Adds Access-Control-Allow-Origin (and Vary) to a response to `request` when its Origin is allowed.
    void decorate(const http::HttpRequest& request, http::HttpResponse& response) const;
    // The answer to OPTIONS on a path served with `methods`: 204, Allow, and for an allowed origin the
    // preflight's Access-Control-Allow-{Origin,Methods,Headers} and Max-Age.
    http::HttpResponse preflight(const http::HttpRequest& request, const std::vector<std::string>& methods) const;

private:
    bool any_origin_ = false;
    std::vector<std::string> origins_;
};

}  // namespace tempered
