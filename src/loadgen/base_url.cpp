#include "loadgen/base_url.h"

#include <charconv>

namespace tempered::loadgen {

Result<BaseUrl> parse_base_url(std::string_view text) {
    const std::string original(text);
    std::string scheme = "http";
    if (const size_t colon = text.find("://"); colon != std::string_view::npos) {
        scheme = std::string(text.substr(0, colon));
        text.remove_prefix(colon + 3);
    }
    if (scheme != "http" && scheme != "https")
        return Error{"--url '" + original + "': the scheme must be http or https"};

    const size_t slash = text.find('/');
    const std::string_view authority = text.substr(0, slash);
    std::string path(slash == std::string_view::npos ? std::string_view{} : text.substr(slash));
    if (authority.empty()) return Error{"--url '" + original + "': no host"};

    // "host", "host:port" or "[v6]:port". The port, when present, must be a number we can connect to.
    const size_t port_colon = authority.rfind(':');
    const bool has_port = port_colon != std::string_view::npos && authority.find(']', port_colon) == std::string_view::npos;
    if (has_port) {
        const std::string_view port = authority.substr(port_colon + 1);
        int value = 0;
        const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), value);
        if (port.empty() || error != std::errc{} || end != port.data() + port.size() || value < 1 || value > 65535)
            return Error{"--url '" + original + "': the port must be a number in 1..65535"};
        if (port_colon == 0) return Error{"--url '" + original + "': no host"};
    }

    while (!path.empty() && path.back() == '/') path.pop_back();
    if (path.size() >= 3 && path.compare(path.size() - 3, 3, "/v1") == 0) path.resize(path.size() - 3);
    while (!path.empty() && path.back() == '/') path.pop_back();
    return BaseUrl{scheme + "://" + std::string(authority), path, ""};
}

}  // namespace tempered::loadgen
