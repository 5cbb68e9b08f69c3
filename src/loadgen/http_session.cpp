#include "loadgen/http_session.h"

#include <algorithm>

#include "http/httplib_include.h"

namespace tempered::loadgen {
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
    const auto connect = std::min<std::chrono::duration<double>>(timeout, std::chrono::duration<double>(kMaxConnectSeconds));
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

Result<int> HttpSession::post_json_streaming(std::string_view route, const std::string& body, const BodyHandlers& handlers) {
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

}  // namespace tempered::loadgen
