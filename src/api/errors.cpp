#include "api/errors.h"

#include <sstream>

namespace tempered::api {
namespace {

nlohmann::json string_or_null(const std::string& text) {
    return text.empty() ? nlohmann::json(nullptr) : nlohmann::json(text);
}

}  // namespace

nlohmann::json ApiError::to_json() const {
    return {{"error",
             {{"message", message}, {"type", type}, {"param", string_or_null(param)}, {"code", string_or_null(code)}}}};
}

std::string ApiError::body() const { return to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

http::HttpResponse to_http_response(const ApiError& error) {
    http::HttpResponse response = http::HttpResponse::json(error.http_status, error.body());
    if (error.retry_after_seconds) {
        response.headers.emplace("Retry-After", std::to_string(*error.retry_after_seconds));
    }
    return response;
}

namespace {

std::string_view anthropic_error_type(int status) {
    switch (status) {
        case 401: return "authentication_error";
        case 403: return "permission_error";
        case 404: return "not_found_error";
        case 408: return "timeout_error";
        case 413: return "request_too_large";
        case 429: return "rate_limit_error";
        case 503: return "overloaded_error";
        default: return status < 500 ? "invalid_request_error" : "api_error";
    }
}

}  // namespace

nlohmann::json anthropic_error_json(const ApiError& error) {
    nlohmann::json inner = {{"type", anthropic_error_type(error.http_status)}, {"message", error.message}};
    if (!error.param.empty()) inner["param"] = error.param;
    return {{"type", "error"}, {"error", std::move(inner)}};
}

http::HttpResponse to_http_response(const ApiError& error, ErrorEnvelope envelope) {
    if (envelope == ErrorEnvelope::OpenAI) return to_http_response(error);
    http::HttpResponse response = http::HttpResponse::json(
        error.http_status, anthropic_error_json(error).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    if (error.retry_after_seconds) response.headers.emplace("Retry-After", std::to_string(*error.retry_after_seconds));
    return response;
}

ApiError invalid_request(std::string message, std::string param, std::string code) {
    return {400, std::move(message), "invalid_request_error", std::move(param), std::move(code), std::nullopt};
}

ApiError model_not_found(std::string_view model) {
    return {404,
            "The model `" + std::string(model) + "` does not exist.",
            "invalid_request_error",
            "model",
            "model_not_found",
            std::nullopt};
}

ApiError context_length_exceeded(int64_t max_context_tokens, int64_t prompt_tokens, int64_t completion_tokens,
                                 std::string param) {
    std::string message = "This model's maximum context length is " + std::to_string(max_context_tokens) +
                          " tokens. However, you requested " + std::to_string(prompt_tokens + completion_tokens) +
                          " tokens (" + std::to_string(prompt_tokens) + " in the " + param + ", " +
                          std::to_string(completion_tokens) + " in the completion). Please reduce the length of the " +
                          param + " or completion.";
    return invalid_request(std::move(message), std::move(param), "context_length_exceeded");
}

ApiError payload_too_large(size_t limit_bytes) {
    return {413,
            "Request body too large: the limit is " + std::to_string(limit_bytes) + " bytes (--max-body-bytes).",
            "invalid_request_error",
            "",
            "request_too_large",
            std::nullopt};
}

ApiError rate_limited(std::string message, int retry_after_seconds) {
    return {429, std::move(message), "requests", "", "rate_limit_exceeded", retry_after_seconds};
}

ApiError request_timeout(double timeout_seconds) {
    std::ostringstream seconds;
    seconds << timeout_seconds;
    return {408,
            "The request took longer than this server's limit of " + seconds.str() +
                " seconds (--request-timeout) and was cancelled.",
            "timeout_error",
            "",
            "request_timeout",
            std::nullopt};
}

ApiError internal_error(std::string message) { return {500, std::move(message), "server_error", "", "", std::nullopt}; }

ApiError service_unavailable(std::string message, std::optional<int> retry_after_seconds) {
    return {503, std::move(message), "server_error", "", "service_unavailable", retry_after_seconds};
}

}  // namespace tempered::api

namespace tempered::api {

http::HttpResponse http_error_response(int status, std::string_view message, ErrorEnvelope envelope) {
    ApiError error{status, std::string(message), status >= 500 ? "server_error" : "invalid_request_error", "",
                   "",     std::nullopt};
    if (status == 413) error.code = "request_too_large";
    if (status == 404) error.code = "unknown_url";
    if (status == 431) error.code = "request_headers_too_large";
    return to_http_response(error, envelope);
}

}  // namespace tempered::api
