// What a client asks about the served model: /v1/models (its card, with the sampling defaults) and
// /v1/models/{model}; /tokenize (text, or as vLLM a chat request's messages through the chat template) and
// /detokenize with its tokenizer.
#pragma once

#include <nlohmann/json.hpp>

#include "edge/guarded_routes.h"
#include "http/http_types.h"
#include "server/generation_path.h"

namespace tempered {

class ModelService {
public:
    // `path` outlives the service.
    explicit ModelService(const GenerationPath& path) : path_(path) {}

    void register_routes(GuardedRoutes& routes);

private:
    nlohmann::json model_card() const;
    http::HttpResponse models(const http::HttpRequest& request) const;
    http::HttpResponse model(const http::HttpRequest& request) const;
    http::HttpResponse tokenize(const http::HttpRequest& request) const;
    http::HttpResponse tokenize_messages(const api::Json& body) const;
    http::HttpResponse tokens_response(const std::vector<int32_t>& tokens) const;
    http::HttpResponse detokenize(const http::HttpRequest& request) const;

    const GenerationPath& path_;
};

}  // namespace tempered
