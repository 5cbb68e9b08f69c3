#include "loadgen/request_body.h"

namespace tempered::loadgen {

std::string_view endpoint_route(Endpoint endpoint) {
    return endpoint == Endpoint::Chat ? "/v1/chat/completions" : "/v1/completions";
}

std::string_view endpoint_name(Endpoint endpoint) { return endpoint == Endpoint::Chat ? "chat" : "completions"; }

nlohmann::json generation_body(const RequestSettings& settings, const std::string& prompt) {
    nlohmann::json body = {{"model", settings.model}, {"max_tokens", settings.max_tokens}, {"ignore_eos", true}};
    if (settings.endpoint == Endpoint::Chat)
        body["messages"] = nlohmann::json::array({{{"role", "user"}, {"content", prompt}}});
    else
        body["prompt"] = prompt;
    if (settings.stream) {
        body["stream"] = true;
        body["stream_options"] = {{"include_usage", true}};
    }
    return body;
}

}  // namespace tempered::loadgen
