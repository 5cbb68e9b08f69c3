#include "loadgen/server.h"

#include <algorithm>
#include <charconv>

#include "http/httplib_include.h"

namespace tempered::loadgen {

// ---- the address -------------------------------------------------------------------------------

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
    const bool has_port =
        port_colon != std::string_view::npos && authority.find(']', port_colon) == std::string_view::npos;
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

// ---- the connection ----------------------------------------------------------------------------

namespace {

constexpr double kMaxConnectSeconds = 10.0;

// httplib's error names ("Connection", "Read") read poorly in a report; say what happened.
std::string describe(httplib::Error error, const BaseUrl& url) {
    switch (error) {
        case httplib::Error::Connection: return "could not connect to " + url.origin;
        case httplib::Error::ConnectionTimeout: return "timed out connecting to " + url.origin;
        case httplib::Error::Read: return "connection closed or timed out while reading the response";
        case httplib::Error::Write: return "connection closed while sending the request";
        case httplib::Error::Canceled: return "canceled";
        default: return "HTTP client error: " + httplib::to_string(error);
    }
}

template <class Duration>
void set_timeouts(httplib::Client& client, Duration timeout) {
    const auto connect =
        std::min<std::chrono::duration<double>>(timeout, std::chrono::duration<double>(kMaxConnectSeconds));
    client.set_connection_timeout(std::chrono::duration_cast<std::chrono::microseconds>(connect));
    client.set_read_timeout(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
    client.set_write_timeout(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
}

// A kept-alive connection the server has since closed (an idle timeout while prompts were being sized,
// or a per-connection request limit) fails as soon as it is used, before any byte of an answer: such a
// request never reached the server's model, so it is sent once more on a fresh connection, as HTTP
// clients do. A failure after the answer began is reported, never retried.
bool stale_connection(httplib::Error error) { return error == httplib::Error::Read || error == httplib::Error::Write; }

}  // namespace

struct HttpSession::Impl {
    explicit Impl(const std::string& origin) : client(origin) {}
    httplib::Client client;
};

HttpSession::HttpSession(const BaseUrl& url, std::chrono::duration<double> timeout)
    : url_(url), impl_(std::make_unique<Impl>(url.origin)) {
    impl_->client.set_keep_alive(true);  // one connection per worker, reused: no connect in the timings
    if (!url.api_key.empty()) impl_->client.set_bearer_token_auth(url.api_key);
    set_timeouts(impl_->client, timeout);
}

HttpSession::~HttpSession() = default;

Result<HttpReply> HttpSession::get(std::string_view route) {
    auto reply = impl_->client.Get(url_.path(route));
    if (!reply && stale_connection(reply.error())) {
        impl_->client.stop();
        reply = impl_->client.Get(url_.path(route));
    }
    if (!reply) return Error{describe(reply.error(), url_)};
    return HttpReply{reply->status, reply->body};
}

Result<HttpReply> HttpSession::post_json(std::string_view route, const std::string& body) {
    auto reply = impl_->client.Post(url_.path(route), body, "application/json");
    if (!reply && stale_connection(reply.error())) {
        impl_->client.stop();
        reply = impl_->client.Post(url_.path(route), body, "application/json");
    }
    if (!reply) return Error{describe(reply.error(), url_)};
    return HttpReply{reply->status, reply->body};
}

Result<int> HttpSession::post_json_streaming(std::string_view route, const std::string& body,
                                             const BodyHandlers& handlers) {
    httplib::Request request;
    request.method = "POST";
    request.path = url_.path(route);
    request.body = body;
    request.set_header("Content-Type", "application/json");
    request.set_header("Accept", "application/json, text/event-stream");
    bool answered = false;
    request.response_handler = [&](const httplib::Response& response) {
        answered = true;
        if (handlers.on_status) handlers.on_status(response.status);
        return true;
    };
    request.content_receiver = [&](const char* data, size_t length, uint64_t, uint64_t) {
        return handlers.on_bytes(std::string_view(data, length));
    };
    httplib::Response response;
    httplib::Error error = httplib::Error::Success;
    bool sent = impl_->client.send(request, response, error);
    if (!sent && !answered && stale_connection(error)) {
        impl_->client.stop();
        response = httplib::Response{};
        error = httplib::Error::Success;
        sent = impl_->client.send(request, response, error);
    }
    if (!sent) return Error{describe(error, url_)};
    return response.status;
}

// ---- error envelopes ---------------------------------------------------------------------------

namespace {

constexpr size_t kBodyExcerptBytes = 200;

}  // namespace

std::optional<std::string> error_message(const nlohmann::json& payload) {
    if (!payload.is_object()) return std::nullopt;
    if (const auto it = payload.find("error"); it != payload.end() && !it->is_null()) {
        if (it->is_string()) return it->get<std::string>();
        if (it->is_object() && it->contains("message") && (*it)["message"].is_string())
            return (*it)["message"].get<std::string>();
        return it->dump();
    }
    if (payload.value("object", "") == "error" && payload.contains("message") && payload["message"].is_string())
        return payload["message"].get<std::string>();
    if (const auto it = payload.find("detail"); it != payload.end())
        return it->is_string() ? it->get<std::string>() : it->dump();
    return std::nullopt;
}

std::string describe_http_error(int status, std::string_view body) {
    std::string message;
    const auto json = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (auto from_envelope = error_message(json)) {
        message = std::move(*from_envelope);
    } else {
        message = std::string(body.substr(0, kBodyExcerptBytes));
        if (body.size() > kBodyExcerptBytes) message += "...";
        for (char& c : message)
            if (c == '\n' || c == '\r') c = ' ';
    }
    return "HTTP " + std::to_string(status) + (message.empty() ? "" : ": " + message);
}

// ---- probes ------------------------------------------------------------------------------------

namespace {

constexpr const char* kProbeText = "Hello world, this is a test.";

Result<nlohmann::json> json_body(const HttpReply& reply, std::string_view what) {
    if (reply.status != 200) return Error{std::string(what) + ": " + describe_http_error(reply.status, reply.body)};
    auto json = nlohmann::json::parse(reply.body, nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded()) return Error{std::string(what) + ": the response is not JSON"};
    return json;
}

nlohmann::json tokenize_body(TokenizeDialect dialect, const std::string& model, const std::string& text) {
    if (dialect == TokenizeDialect::ContentField) return {{"content", text}, {"add_special", true}};
    return {{"model", model}, {"prompt", text}, {"add_special_tokens", true}};
}

}  // namespace

Result<nlohmann::json> json_reply(const Result<HttpReply>& reply, std::string_view what) {
    if (!reply) return Error{reply.error().message};
    return json_body(*reply, what);
}

Result<std::vector<std::string>> model_ids(const HttpReply& reply) {
    auto json = json_body(reply, "GET /v1/models");
    if (!json) return json.error();
    std::vector<std::string> ids;
    if (json->contains("data") && (*json)["data"].is_array())
        for (const auto& card : (*json)["data"])
            if (card.is_object() && card.contains("id") && card["id"].is_string()) ids.push_back(card["id"]);
    return ids;
}

Result<int64_t> count_tokens(HttpSession& session, TokenizeDialect dialect, const std::string& model,
                             const std::string& text) {
    auto json =
        json_reply(session.post_json("/tokenize", tokenize_body(dialect, model, text).dump()), "POST /tokenize");
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

}  // namespace tempered::loadgen
