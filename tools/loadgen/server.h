// The server under test, as a benchmark reaches it: its address (the --url flag), one keep-alive HTTP
// connection per thread, the error envelopes it answers with, and the questions asked of it before a
// run (which models it serves, how many tokens a text is). cpp-httplib stays behind this file.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace tempered::loadgen {

// Users paste either the server's root ("http://host:8000") or the base URL their OpenAI SDK uses
// ("http://host:8000/v1"); both name the same server, so a trailing "/v1" (and "/") is dropped and
// paths are built from the root.
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

struct HttpReply {
    int status = 0;
    std::string body;
};

// One keep-alive HTTP connection to the server, used by one thread at a time. It hands a response body
// over piece by piece as it arrives, so that a streamed response can be timed chunk by chunk.
class HttpSession {
public:
    // `timeout` bounds connecting (at most 10 s of it), each send and each silent wait for bytes.
    HttpSession(const BaseUrl& url, std::chrono::duration<double> timeout);
    ~HttpSession();
    HttpSession(const HttpSession&) = delete;
    HttpSession& operator=(const HttpSession&) = delete;

    // Whole-body requests, for the probes before a run. The error is the transport failure.
    Result<HttpReply> get(std::string_view route);
    Result<HttpReply> post_json(std::string_view route, const std::string& body);

    // A POST whose response is consumed as it arrives: `on_status` once, before any body bytes, then
    // `on_bytes` for each piece read from the socket; on_bytes returning false abandons the request
    // (the error then says "canceled"). Returns the status, or the transport failure.
    struct BodyHandlers {
        std::function<void(int status)> on_status;
        std::function<bool(std::string_view bytes)> on_bytes;
    };
    Result<int> post_json_streaming(std::string_view route, const std::string& body, const BodyHandlers& handlers);

    const BaseUrl& url() const { return url_; }

private:
    struct Impl;
    BaseUrl url_;
    std::unique_ptr<Impl> impl_;
};

// The message of an error payload in any of the shapes servers use: OpenAI's {"error": {"message"}},
// {"error": "text"}, vLLM's older {"object": "error", "message"} and FastAPI's {"detail"}.
std::optional<std::string> error_message(const nlohmann::json& payload);

// "HTTP 400: <message>" from a non-2xx response: the envelope's message, else the start of the body.
std::string describe_http_error(int status, std::string_view body);

// The JSON body of a 200 reply; otherwise an Error starting with `what` ("GET /v1/models"): the
// transport failure, the HTTP error, or a body that is not JSON.
Result<nlohmann::json> json_reply(const Result<HttpReply>& reply, std::string_view what);

// The model ids of a GET /v1/models reply, in the server's order.
Result<std::vector<std::string>> model_ids(const HttpReply& reply);

// Which body shape the server's POST /tokenize understands. /tokenize is not part of the OpenAI API:
// tempered and vLLM take {"prompt", "add_special_tokens"}, llama.cpp's server takes {"content",
// "add_special"}; all answer {"tokens": [...]}.
enum class TokenizeDialect { PromptField, ContentField };

// Asks /tokenize in each dialect about a short text; nullopt when the server answers neither with a
// non-empty token list (no such endpoint, or another shape). llama.cpp's server answers the other
// dialect with an empty list, hence the check on the count.
std::optional<TokenizeDialect> detect_tokenize_dialect(HttpSession& session, const std::string& model);

// Tokens of `text` with the special tokens a completion prompt gets (BOS, where the model adds one).
Result<int64_t> count_tokens(HttpSession& session, TokenizeDialect dialect, const std::string& model,
                             const std::string& text);

}  // namespace tempered::loadgen
