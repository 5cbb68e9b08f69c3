// OpenAI-style errors: what a request did wrong (or what the server could not do), as the HTTP status
// and the body {"error":{"message","type","param","code"}} that OpenAI clients parse. Library code
// returns an ApiError (in an ApiResult); the HTTP edge turns it into a response with to_http_response.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "http/http_types.h"

namespace tempered::api {

struct ApiError {
    int http_status = 400;
    std::string message;
    std::string type = "invalid_request_error";
    std::string param;  // "" renders as null; otherwise the offending field, e.g. "messages[1].content"
    std::string code;   // "" renders as null
    std::optional<int> retry_after_seconds;  // 429/503: sent as the Retry-After header

    nlohmann::json to_json() const;  // the envelope {"error": {...}}
    std::string body() const;        // to_json() as text
};

http::HttpResponse to_http_response(const ApiError& error);

// The Messages API's routes answer errors in Anthropic's envelope {"type": "error", "error": {"type",
// "message"}} (the type from the status: invalid_request_error, authentication_error, not_found_error,
// request_too_large, rate_limit_error, timeout_error, api_error, overloaded_error), which the Anthropic SDK
// raises as its own exception classes; the field at fault is named in the message and in "param".
enum class ErrorEnvelope { OpenAI, Anthropic };
nlohmann::json anthropic_error_json(const ApiError& error);
http::HttpResponse to_http_response(const ApiError& error, ErrorEnvelope envelope);

// 400: the request is malformed or a value is out of range.
ApiError invalid_request(std::string message, std::string param = {}, std::string code = {});
// 404: no served model has that name.
ApiError model_not_found(std::string_view model);
// 400 code context_length_exceeded: prompt + completion do not fit the model's context. The message
// says "maximum context length is N tokens", which clients (and OpenAI-compatible tools) match on.
ApiError context_length_exceeded(int64_t max_context_tokens, int64_t prompt_tokens, int64_t completion_tokens,
                                 std::string param = "messages");
// 413: the body is larger than --max-body-bytes.
ApiError payload_too_large(size_t limit_bytes);
// 429: too many requests waiting; retry after the given seconds.
ApiError rate_limited(std::string message, int retry_after_seconds);
// 408 type timeout_error, code request_timeout: the request ran past --request-timeout (queued or
// generating) and was cancelled. A 4xx, not a 5xx: the server is healthy, the request outran the
// operator's limit, and a gateway should not count it against the worker.
ApiError request_timeout(double timeout_seconds);
// 500: a bug or an unexpected failure on our side.
ApiError internal_error(std::string message);
// 503: the server is starting, stopping or overloaded.
ApiError service_unavailable(std::string message, std::optional<int> retry_after_seconds = std::nullopt);

// The value of an API operation, or the ApiError to send instead.
template <class T>
using ApiResult = Result<T, ApiError>;

}  // namespace tempered::api

namespace tempered::api {
// For http::HttpServer::set_error_renderer: the errors the HTTP layer produces itself (404 unknown
// URL, 405, 413, 500) in the same envelope and with the same codes as ours.
http::HttpResponse http_error_response(int status, std::string_view message,
                                       ErrorEnvelope envelope = ErrorEnvelope::OpenAI);
}  // namespace tempered::api
