#include "loadgen/server_probe.h"

#include <nlohmann/json.hpp>

#include "loadgen/response_fields.h"

namespace tempered::loadgen {
namespace {

constexpr const char* kProbeText = "Hello world, this is a test.";

Result<nlohmann::json> json_reply(const HttpReply& reply, std::string_view what) {
    if (reply.status != 200) return Error{std::string(what) + ": " + describe_http_error(reply.status, reply.body)};
    auto json = nlohmann::json::parse(reply.body, nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded()) return Error{std::string(what) + ": the response is not JSON"};
    return json;
}

Result<nlohmann::json> json_reply(const Result<HttpReply>& reply, std::string_view what) {
    if (!reply) return Error{reply.error().message};
    return json_reply(*reply, what);
}

nlohmann::json tokenize_body(TokenizeDialect dialect, const std::string& model, const std::string& text) {
    if (dialect == TokenizeDialect::ContentField) return {{"content", text}, {"add_special", true}};
    return {{"model", model}, {"prompt", text}, {"add_special_tokens", true}};
}

}  // namespace

Result<std::vector<std::string>> model_ids(const HttpReply& reply) {
    auto json = json_reply(reply, "GET /v1/models");
    if (!json) return json.error();
    std::vector<std::string> ids;
    if (json->contains("data") && (*json)["data"].is_array())
        for (const auto& card : (*json)["data"])
            if (card.is_object() && card.contains("id") && card["id"].is_string()) ids.push_back(card["id"]);
    return ids;
}

Result<int64_t> count_tokens(HttpSession& session, TokenizeDialect dialect, const std::string& model,
                             const std::string& text) {
    auto json = json_reply(session.post_json("/tokenize", tokenize_body(dialect, model, text).dump()), "POST /tokenize");
    if (!json) return json.error();
    if (!json->contains("tokens") || !(*json)["tokens"].is_array())
        return Error{"POST /tokenize: the response has no \"tokens\" list"};
    return static_cast<int64_t>((*json)["tokens"].size());
}

std::optional<TokenizeDialect> detect_tokenize_dialect(HttpSession& session, const std::string& model) {
    for (TokenizeDialect dialect : {TokenizeDialect::PromptField, TokenizeDialect::ContentField}) {
        auto count = count_tokens(session, dialect, model, kProbeText);
        if (count && *count > 0) return dialect;
    }
    return std::nullopt;
}

Result<int64_t> served_prompt_tokens(HttpSession& session, const RequestSettings& settings, const std::string& text) {
    RequestSettings probe = settings;
    probe.stream = false;
    probe.max_tokens = 1;
    auto json = json_reply(session.post_json(endpoint_route(probe.endpoint), generation_body(probe, text).dump()),
                           "POST " + std::string(endpoint_route(probe.endpoint)));
    if (!json) return json.error();
    const PayloadContent content = read_payload(*json, probe.endpoint);
    if (!content.prompt_tokens) return Error{"the response has no usage.prompt_tokens"};
    return *content.prompt_tokens;
}

}  // namespace tempered::loadgen
