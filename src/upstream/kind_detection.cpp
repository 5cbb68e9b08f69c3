#include "upstream/kind_detection.h"

#include <nlohmann/json.hpp>

#include "upstream/upstream_client.h"

namespace tempered::upstream {

namespace {

// The JSON object a GET of `path` answers with, or a discarded value (no answer, not 200, not an object).
nlohmann::json get_object(httplib::Client& client, const std::string& path) {
    const httplib::Result result = client.Get(path);
    if (!result || result->status != 200) return nlohmann::json(nlohmann::json::value_t::discarded);
    nlohmann::json body = nlohmann::json::parse(result->body, nullptr, /*allow_exceptions=*/false);
    return body.is_object() ? body : nlohmann::json(nlohmann::json::value_t::discarded);
}

}  // namespace

UpstreamKind detect_upstream_kind(const UpstreamAddress& address, const std::string& api_key,
                                  std::chrono::seconds timeout) {
    httplib::Client client = upstream_client(address, api_key, timeout);
    const std::string& prefix = address.path_prefix;
    if (get_object(client, prefix + "/server_info").contains("degeneration_guard")) return UpstreamKind::Tempered;
    if (get_object(client, prefix + "/props").contains("default_generation_settings")) return UpstreamKind::LlamaCpp;
    if (get_object(client, prefix + "/version").contains("version")) return UpstreamKind::Vllm;
    if (!get_object(client, prefix + "/get_server_info").is_discarded()) return UpstreamKind::Sglang;
    return UpstreamKind::OpenAi;
}

}  // namespace tempered::upstream
