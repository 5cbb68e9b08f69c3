#include "server/model_service.h"

#include "api/generation_request.h"
#include "api/json_fields.h"

namespace tempered {
namespace {

// A boolean field of the body, or `fallback` when absent.
api::ApiResult<bool> flag_or(const api::Json& body, const char* name, bool fallback) {
    const api::Json* flag = api::find_field(body, name);
    if (!flag || flag->is_null()) return fallback;
    if (!flag->is_boolean()) return api::invalid_request(std::string("'") + name + "' must be a boolean", name);
    return flag->get<bool>();
}

}  // namespace

void ModelService::register_routes(GuardedRoutes& routes) {
    add_route(routes, "GET", "/v1/models", [this](const http::HttpRequest& request) { return models(request); });
    add_route(routes, "GET", "/v1/models/{model}", [this](const http::HttpRequest& request) { return model(request); });
    add_route(routes, "POST", "/tokenize", [this](const http::HttpRequest& request) { return tokenize(request); });
    add_route(routes, "POST", "/detokenize", [this](const http::HttpRequest& request) { return detokenize(request); });
}

nlohmann::json ModelService::model_card() const {
    const ServedModel& served = path_.model();
    const ServiceSettings& settings = path_.settings();
    nlohmann::json card = {{"id", settings.served_model_name},
                           {"object", "model"},
                           {"created", settings.created},
                           {"owned_by", "tempered"},
                           {"max_model_len", served.config.context_length},
                           {"kv_cache_dtype", settings.kv_cache_dtype},
                           {"sampling_defaults", describe_sampling_defaults(settings.sampling)}};
    if (!served.has_model) card.erase("max_model_len");  // the upstream's to say
    return card;
}

http::HttpResponse ModelService::models(const http::HttpRequest&) const {
    return json_response({{"object", "list"}, {"data", nlohmann::json::array({model_card()})}});
}

http::HttpResponse ModelService::model(const http::HttpRequest& request) const {
    const ServiceSettings& settings = path_.settings();
    const auto it = request.path_params.find("model");
    if (it == request.path_params.end() || it->second != settings.served_model_name)
        return api::to_http_response(api::model_not_found(it == request.path_params.end() ? "" : it->second));
    return json_response(model_card());
}

http::HttpResponse ModelService::tokenize(const http::HttpRequest& request) const {
    const ServedModel& served = path_.model();
    if (auto error = path_.needs_own_model("/tokenize")) return api::to_http_response(*error);
    auto body = api::parse_json_object(request.body);
    if (!body) return api::to_http_response(body.error());
    if (api::find_field(*body, "messages")) return tokenize_messages(*body);
    const api::Json* text = api::find_field(*body, "prompt");
    if (!text) text = api::find_field(*body, "content");  // llama.cpp's name for it
    if (!text || !text->is_string())
        return api::to_http_response(api::invalid_request("'prompt' (or 'messages') must be a string", "prompt"));
    auto add_special = flag_or(*body, "add_special_tokens", true);
    if (!add_special) return api::to_http_response(add_special.error());
    const auto tokens = served.tokenizer.encode(text->get<std::string>(), *add_special, /*parse_special=*/true);
    return tokens_response(tokens);
}

// vLLM's form: a chat request's messages (with tools, chat_template_kwargs) through the chat template, as the
// chat endpoint renders them (add_generation_prompt, true by default, as vLLM's).
http::HttpResponse ModelService::tokenize_messages(const api::Json& body) const {
    auto add_generation_prompt = flag_or(body, "add_generation_prompt", true);
    if (!add_generation_prompt) return api::to_http_response(add_generation_prompt.error());
    auto request = api::parse_chat_request_json(body);  // the chat's fields; add_generation_prompt is not one of them
    if (!request) return api::to_http_response(request.error());
    auto tokens = path_.chat_renderer().render(*request, *add_generation_prompt);
    if (!tokens) return api::to_http_response(tokens.error());
    return tokens_response(*tokens);
}

http::HttpResponse ModelService::tokens_response(const std::vector<int32_t>& tokens) const {
    return json_response(
        {{"tokens", tokens}, {"count", tokens.size()}, {"max_model_len", path_.model().config.context_length}});
}

http::HttpResponse ModelService::detokenize(const http::HttpRequest& request) const {
    const ServedModel& served = path_.model();
    if (auto error = path_.needs_own_model("/detokenize")) return api::to_http_response(*error);
    auto body = api::parse_json_object(request.body);
    if (!body) return api::to_http_response(body.error());
    const api::Json* tokens = api::find_field(*body, "tokens");
    if (!tokens || !tokens->is_array())
        return api::to_http_response(api::invalid_request("'tokens' must be an array of token ids", "tokens"));
    std::vector<int32_t> ids;
    for (size_t i = 0; i < tokens->size(); ++i) {
        const auto& id = (*tokens)[i];
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= served.tokenizer.vocab_size())
            return api::to_http_response(api::invalid_request(
                "token ids must be integers in [0, " + std::to_string(served.tokenizer.vocab_size()) + ")",
                api::param_path("tokens", i)));
        ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
    }
    return json_response({{"prompt", served.tokenizer.decode(ids)}});
}

}  // namespace tempered
