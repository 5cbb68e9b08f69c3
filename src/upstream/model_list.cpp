#include "upstream/model_list.h"

#include <nlohmann/json.hpp>

#include "upstream/upstream_client.h"

namespace tempered::upstream {

Result<std::string> first_upstream_model(const UpstreamAddress& address, const std::string& api_key,
                                         std::chrono::seconds timeout) {
    httplib::Client client = upstream_client(address, api_key, timeout);
    const std::string where = address.scheme_host_port + address.path_prefix + "/v1/models";
    const httplib::Result result = client.Get(address.path_prefix + "/v1/models");
    if (!result) return Error{"the upstream " + where + " is unreachable: " + httplib::to_string(result.error())};
    if (result->status != 200)
        return Error{"the upstream " + where + " answered HTTP " + std::to_string(result->status)};
    const nlohmann::json body = nlohmann::json::parse(result->body, nullptr, /*allow_exceptions=*/false);
    if (!body.is_object() || !body.contains("data") || !body["data"].is_array() || body["data"].empty() ||
        !body["data"][0].is_object() || !body["data"][0].contains("id") || !body["data"][0]["id"].is_string())
        return Error{"the upstream " + where + " lists no model (name one with --upstream-model)"};
    return body["data"][0]["id"].get<std::string>();
}

}  // namespace tempered::upstream
