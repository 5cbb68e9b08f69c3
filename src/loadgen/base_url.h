// The server address a benchmark talks to, from the --url flag. Users paste either the server's root
// ("http://host:8000") or the base URL their OpenAI SDK uses ("http://host:8000/v1"); both name the
// same server, so a trailing "/v1" (and "/") is dropped and paths are built from the root.
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"

namespace tempered::loadgen {

struct BaseUrl {
    std::string origin;       // "http://127.0.0.1:8000": scheme, host and port, what the HTTP client takes
    std::string path_prefix;  // "" or "/proxy" for a server mounted under a path; never ends in '/'
    std::string api_key;      // sent as "Authorization: Bearer ..." when not empty (--api-key)

    // "/v1/completions" -> prefix + "/v1/completions"
    std::string path(std::string_view route) const { return path_prefix + std::string(route); }
    std::string to_string() const { return origin + path_prefix; }
};

// Accepts http:// and https:// URLs; a URL without a scheme is taken as http. Fails on another
// scheme, an empty host or a port that is not a number in 1..65535.
Result<BaseUrl> parse_base_url(std::string_view text);

}  // namespace tempered::loadgen
