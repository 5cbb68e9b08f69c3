#include "http/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>

#include "http/client_connection_limit.h"
#include "http/httplib_include.h"
#include "http/lifo_worker_pool.h"
#include "http/read_deadline.h"
#include "http/router.h"

namespace tempered::http {
namespace {

// httplib adds these pseudo-headers itself; they are not the client's.
bool is_pseudo_header(const std::string& name) {
    return name == "REMOTE_ADDR" || name == "REMOTE_PORT" || name == "LOCAL_ADDR" || name == "LOCAL_PORT";
}

// Waits up to `timeout` for `events` on `fd`; false on timeout or error.
bool wait_for(int fd, short events, std::chrono::milliseconds timeout) {
    pollfd entry{fd, events, 0};
    while (true) {
        const int ready = ::poll(&entry, 1, static_cast<int>(timeout.count()));
        if (ready < 0 && errno == EINTR) continue;
        return ready > 0;
    }
}

// Non-blocking: false once the peer has closed (FIN) or reset the connection. Bytes waiting to be
// read (a pipelined request) mean the peer is alive.
bool socket_alive(int fd) {
    pollfd entry{fd, POLLIN, 0};
    const int ready = ::poll(&entry, 1, 0);
    if (ready == 0) return true;
    if (ready < 0) return errno == EINTR;
    if (entry.revents & (POLLERR | POLLHUP | POLLNVAL)) return false;
    char byte;
    const ssize_t peeked = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (peeked > 0) return true;
    if (peeked == 0) return false;
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
}

void address_of(const sockaddr_storage& address, std::string& ip, int& port) {
    char text[INET6_ADDRSTRLEN] = {};
    if (address.ss_family == AF_INET) {
        const auto& v4 = reinterpret_cast<const sockaddr_in&>(address);
        ::inet_ntop(AF_INET, &v4.sin_addr, text, sizeof(text));
        port = ntohs(v4.sin_port);
    } else if (address.ss_family == AF_INET6) {
        const auto& v6 = reinterpret_cast<const sockaddr_in6&>(address);
        ::inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof(text));
        port = ntohs(v6.sin6_port);
    }
    ip = text;
}

using Clock = std::chrono::steady_clock;

// One accepted connection as an httplib::Stream. We serve connections ourselves (see
// TrackingServer) so that waiting for the next keep-alive request also wakes on stop(), so that
// handlers can ask whether their client is still there, and so that reading a request has deadlines.
class ConnectionStream final : public httplib::Stream {
public:
    ConnectionStream(int fd, std::chrono::milliseconds read_timeout, std::chrono::milliseconds write_timeout)
        : fd_(fd), read_timeout_(read_timeout), write_timeout_(write_timeout) {}

    bool has_buffered_input() const { return begin_ < end_; }

    // A new request: its line and headers must arrive by `deadline`.
    void begin_request(Clock::time_point deadline) {
        deadline_.start(ReadDeadline::Phase::Header, deadline);
        timed_out_ = ReadDeadline::Phase::None;
        response_started_ = false;
        close_after_response_ = false;
    }
    // This request's body stays unread (its route's guard refused it): the connection cannot carry another.
    void close_after_response() { close_after_response_ = true; }
    bool closing() const { return close_after_response_; }
    void begin_body(Clock::time_point deadline) { deadline_.start(ReadDeadline::Phase::Body, deadline); }
    void end_reading() { deadline_.clear(); }
    // The phase whose deadline a read of this request missed; None if none did.
    ReadDeadline::Phase timed_out() const { return timed_out_; }
    // Whether any byte of this request's response has been written.
    bool response_started() const { return response_started_; }

    bool is_readable() const override { return has_buffered_input() || wait_for(fd_, POLLIN, next_read_wait()); }
    bool is_writable() const override { return wait_for(fd_, POLLOUT, write_timeout_) && socket_alive(fd_); }

    ssize_t read(char* out, size_t size) override {
        if (!has_buffered_input()) {
            if (!wait_for(fd_, POLLIN, next_read_wait())) {
                if (deadline_.passed(Clock::now())) timed_out_ = deadline_.phase();
                return -1;
            }
            const ssize_t received = receive(buffer_.data(), buffer_.size());
            if (received <= 0) return received;
            begin_ = 0;
            end_ = static_cast<size_t>(received);
        }
        const size_t count = std::min(size, end_ - begin_);
        std::memcpy(out, buffer_.data() + begin_, count);
        begin_ += count;
        return static_cast<ssize_t>(count);
    }

    // Sends all of `data` (httplib writes status lines and headers without retrying a partial write), or
    // fails once the client has taken nothing for write_timeout: a client that stops reading cannot hold a
    // writer, and the request behind it, longer than that.
    ssize_t write(const char* data, size_t size) override {
        response_started_ = true;
        size_t sent = 0;
        Clock::time_point stalled_at = Clock::now() + write_timeout_;
        while (sent < size) {
            const auto left = std::chrono::ceil<std::chrono::milliseconds>(stalled_at - Clock::now());
            if (left.count() <= 0 || client_stalled() || !wait_for(fd_, POLLOUT, left) || !socket_alive(fd_)) return -1;
            const ssize_t now_sent = ::send(fd_, data + sent, size - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (now_sent < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) return -1;
            if (now_sent <= 0) continue;
            sent += static_cast<size_t>(now_sent);
            bytes_sent_ += static_cast<uint64_t>(now_sent);
            stalled_at = Clock::now() + write_timeout_;  // progress
        }
        return static_cast<ssize_t>(size);
    }

    // True once the client has taken none of the bytes waiting for it for write_timeout. The kernel grows a
    // socket's send buffer to megabytes, so send() alone would notice a client that stopped reading a
    // stream only after minutes of tokens; what the client's side has acknowledged says whether it reads.
    bool client_stalled() {
        int queued = 0;  // sent but not yet acknowledged by the client
        if (::ioctl(fd_, SIOCOUTQ, &queued) != 0 || queued < 0) return false;
        const uint64_t taken = bytes_sent_ - static_cast<uint64_t>(queued);
        const Clock::time_point now = Clock::now();
        if (queued == 0 || taken > bytes_taken_) {
            bytes_taken_ = taken;
            last_taken_at_ = now;
            return false;
        }
        return now - last_taken_at_ >= write_timeout_;
    }

    void get_remote_ip_and_port(std::string& ip, int& port) const override {
        sockaddr_storage address{};
        socklen_t length = sizeof(address);
        if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0) address_of(address, ip, port);
    }
    void get_local_ip_and_port(std::string& ip, int& port) const override {
        sockaddr_storage address{};
        socklen_t length = sizeof(address);
        if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0) address_of(address, ip, port);
    }
    socket_t socket() const override { return fd_; }

private:
    std::chrono::milliseconds next_read_wait() const { return deadline_.next_wait(read_timeout_, Clock::now()); }

    ssize_t receive(char* out, size_t size) {
        while (true) {
            const ssize_t received = ::recv(fd_, out, size, 0);
            if (received < 0 && errno == EINTR) continue;
            return received < 0 ? -1 : received;
        }
    }

    int fd_;
    std::chrono::milliseconds read_timeout_;
    std::chrono::milliseconds write_timeout_;
    ReadDeadline deadline_;
    ReadDeadline::Phase timed_out_ = ReadDeadline::Phase::None;
    bool response_started_ = false;
    bool close_after_response_ = false;
    uint64_t bytes_sent_ = 0;
    uint64_t bytes_taken_ = 0;  // of those, acknowledged by the client when last seen to grow
    Clock::time_point last_taken_at_ = Clock::now();
    std::array<char, 4096> buffer_{};
    size_t begin_ = 0;
    size_t end_ = 0;
};

// The connection the current thread serves: httplib runs a connection's requests, handlers and
// content providers on the thread that called process_and_close_socket.
thread_local ConnectionStream* current_connection = nullptr;

class SinkWriter final : public StreamWriter {
public:
    SinkWriter(httplib::DataSink& sink, ConnectionStream* connection)
        : sink_(sink), connection_(connection), fd_(connection != nullptr ? connection->socket() : -1) {}

    bool write(std::string_view chunk) override {
        if (failed_) return false;
        if (chunk.empty()) return is_connection_alive();
        // cpp-httplib's write checks the socket (poll + peek) before each send.
        if (!sink_.write(chunk.data(), chunk.size())) failed_ = true;
        return !failed_;
    }
    // Also false for a client that has stopped reading (ConnectionStream::client_stalled).
    bool is_connection_alive() const override {
        const bool stalled = connection_ != nullptr && connection_->client_stalled();
        if (!failed_ && (stalled || !socket_alive(fd_))) failed_ = true;
        return !failed_;
    }
    bool failed() const { return failed_; }

private:
    httplib::DataSink& sink_;
    ConnectionStream* connection_;
    int fd_;
    mutable bool failed_ = false;
};

std::string_view error_type_for(int status) { return status < 500 ? "invalid_request_error" : "server_error"; }

// When the connection the current thread serves was accepted: its first request's header deadline
// runs from then, so a connection that waited in the queue for a thread has used part of it.
thread_local Clock::time_point connection_accepted_at{};

// The worker pool httplib hands each accepted connection to (it enqueues it right after accept()),
// noting when it was accepted for the thread that serves it.
class AcceptTimingPool final : public httplib::TaskQueue {
public:
    explicit AcceptTimingPool(size_t threads) : pool_(threads) {}
    void enqueue(std::function<void()> serve) override {
        pool_.enqueue([serve = std::move(serve), accepted = Clock::now()] {
            connection_accepted_at = accepted;
            serve();
        });
    }
    void shutdown() override { pool_.shutdown(); }

private:
    LifoWorkerPool pool_;
};

// A whole response for a connection we close right after it (408, 429), written without httplib.
std::string closing_response(const HttpResponse& response, std::string_view reason) {
    std::string out = "HTTP/1.1 " + std::to_string(response.status) + " " + std::string(reason) + "\r\n";
    out += "Content-Type: " + response.content_type + "\r\n";
    for (const auto& [name, value] : response.headers) out += name + ": " + value + "\r\n";
    out += "Content-Length: " + std::to_string(response.body.size()) + "\r\nConnection: close\r\n\r\n";
    return out + response.body;
}

// Writes a last response and closes politely: stop sending, then read what the client still sends for up
// to `linger`, so that closing with unread bytes does not reset the connection before the client has
// read the answer. The caller closes the socket.
void answer_and_close(ConnectionStream& stream, const std::string& response, std::chrono::milliseconds linger) {
    const int fd = stream.socket();
    stream.write(response.data(), response.size());
    ::shutdown(fd, SHUT_WR);
    const Clock::time_point until = Clock::now() + linger;
    std::array<char, 4096> discard{};
    while (true) {
        const auto left =
            std::max(std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now()), std::chrono::milliseconds(0));
        if (!wait_for(fd, POLLIN, left) || ::recv(fd, discard.data(), discard.size(), MSG_DONTWAIT) <= 0) break;
    }
}

// The message of a 408: which part of the request was late, and the flag that sets its deadline.
std::string timeout_message(ReadDeadline::Phase phase, const HttpServerOptions& options) {
    const bool header = phase == ReadDeadline::Phase::Header;
    const auto limit = header ? options.header_timeout : options.body_timeout;
    char seconds[32];
    std::snprintf(seconds, sizeof(seconds), "%g", std::chrono::duration<double>(limit).count());
    return std::string("the request ") + (header ? "headers" : "body") + " did not arrive within " + seconds +
           " s (--" + (header ? "header" : "body") + "-timeout)";
}

}  // namespace

HttpResponse default_error_response(int status, std::string_view message, const HttpRequest& /*request*/) {
    nlohmann::json body = {
        {"error", {{"message", message}, {"type", error_type_for(status)}, {"param", nullptr}, {"code", nullptr}}}};
    return HttpResponse::json(status, body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

// httplib::Server whose per-connection loop is ours: httplib parses requests and writes responses
// (process_request), we decide when to wait for the next request, when to give up on it, and whom to
// refuse.
class TrackingServer final : public httplib::Server {
public:
    TrackingServer(const HttpServerOptions& options, const ErrorRenderer& render_error)
        : options_(options),
          render_error_(render_error),
          per_client_(options.max_connections_per_client, options.client_ipv6_prefix) {
        if (::pipe2(stop_pipe_, O_CLOEXEC) != 0) stop_pipe_[0] = stop_pipe_[1] = -1;
    }
    ~TrackingServer() override {
        for (const int fd : stop_pipe_) {
            if (fd >= 0) ::close(fd);
        }
    }

    // Wakes every connection waiting for its next request; they close instead of waiting on.
    void wake_idle_connections() {
        const char byte = 1;
        if (stop_pipe_[1] >= 0) static_cast<void>(::write(stop_pipe_[1], &byte, 1));
    }

    std::atomic<size_t> open_connections{0};

private:
    // Overrides httplib's (private) per-connection loop.
    bool process_and_close_socket(socket_t sock) override {
        ++open_connections;
        ConnectionStream stream(sock, options_.read_timeout, options_.write_timeout);
        std::string client;
        int client_port = 0;
        stream.get_remote_ip_and_port(client, client_port);
        bool ok = false;
        if (per_client_.try_open(client)) {
            current_connection = &stream;
            ok = serve_requests(stream);
            current_connection = nullptr;
            per_client_.close(client);
        } else {
            refuse(stream);
        }
        ::shutdown(sock, SHUT_RDWR);
        ::close(sock);
        --open_connections;
        return ok;
    }

    bool serve_requests(ConnectionStream& stream) {
        Clock::time_point request_began =
            connection_accepted_at == Clock::time_point{} ? Clock::now() : connection_accepted_at;
        bool ok = false;
        for (size_t remaining = keep_alive_max_count_; remaining > 0 && svr_sock_ != INVALID_SOCKET; --remaining) {
            const bool first = remaining == keep_alive_max_count_;
            // A new connection has its header timeout to start; an idle one, the keep-alive timeout.
            const Clock::time_point wait_until =
                first ? request_began + options_.header_timeout : Clock::now() + options_.keep_alive_timeout;
            if (!wait_for_request(stream, wait_until)) break;
            if (!first) request_began = Clock::now();
            stream.begin_request(request_began + options_.header_timeout);
            bool connection_closed = false;
            ok = process_request(
                stream, /*close_connection=*/remaining == 1, connection_closed,
                [&stream, this](httplib::Request&) { stream.begin_body(Clock::now() + options_.body_timeout); });
            if (stream.timed_out() != ReadDeadline::Phase::None) {
                answer_timeout(stream);
                break;
            }
            if (!ok || connection_closed || stream.closing()) break;
        }
        return ok;
    }

    // A request that missed its deadline gets 408 unless httplib already answered it (the error handler
    // makes its 400 a 408); then the connection closes.
    void answer_timeout(ConnectionStream& stream) const {
        if (stream.response_started()) return;
        const HttpResponse response = render_error_(408, timeout_message(stream.timed_out(), options_), HttpRequest{});
        // No lingering for a client already too slow: only what it has sent is read.
        answer_and_close(stream, closing_response(response, "Request Timeout"), std::chrono::milliseconds(0));
    }

    // A client over --max-connections-per-client: 429 and close, without reading its request.
    void refuse(ConnectionStream& stream) const {
        const HttpResponse response =
            render_error_(429,
                          "too many connections from this address: the limit is " +
                              std::to_string(per_client_.max_per_client()) + " (--max-connections-per-client)",
                          HttpRequest{});
        // Answered on accept, likely before the request arrives: wait briefly for it (and the close).
        answer_and_close(stream, closing_response(response, "Too Many Requests"), std::chrono::milliseconds(500));
    }

    // True when request bytes are waiting; false at `deadline` (keep-alive or first header timeout), on
    // peer close or on stop().
    bool wait_for_request(const ConnectionStream& stream, Clock::time_point deadline) const {
        if (stream.has_buffered_input()) return true;  // a pipelined request
        pollfd entries[2] = {{stream.socket(), POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
        while (true) {
            const auto left = std::max(std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()),
                                       std::chrono::milliseconds(0));
            const int ready = ::poll(entries, stop_pipe_[0] >= 0 ? 2 : 1, static_cast<int>(left.count()));
            if (ready < 0 && errno == EINTR) continue;
            if (ready <= 0 || (entries[1].revents & POLLIN)) return false;
            return (entries[0].revents & POLLIN) != 0;
        }
    }

    const HttpServerOptions& options_;
    const ErrorRenderer& render_error_;
    ClientConnectionLimit per_client_;
    int stop_pipe_[2] = {-1, -1};
};

struct HttpServer::Impl {
    explicit Impl(HttpServerOptions options_in) : options(std::move(options_in)) {}

    HttpServerOptions options;
    Router router;
    ErrorRenderer render_error = default_error_response;
    TrackingServer server{options, render_error};
    std::thread listen_thread;
    std::atomic<int> listen_fd{-1};
    int bound_port = -1;

    void configure();
    HttpRequest request_of(const httplib::Request& in) const;  // all but the body and path params
    // `guard_passed`: the route's guard already let the request's headers through (serve_with_body).
    void serve(const httplib::Request& in, std::string body, httplib::Response& out, bool guard_passed = false) const;
    // The route's guard on the headers alone; true when it answered (and the body must stay unread).
    bool refused_before_body(const httplib::Request& in, httplib::Response& out) const;
    // More headers than --max-request-headers: true when it answered 431 (and the connection closes).
    bool refused_for_header_count(const httplib::Request& in, httplib::Response& out) const;
    // `Expect: 100-continue`: the header count and the route's key are checked before the client is told to
    // send its body; the status to answer (100, or the refusal's).
    int continue_or_refuse(const httplib::Request& in, httplib::Response& out) const;
    void serve_with_body(const httplib::Request& in, httplib::Response& out,
                         const httplib::ContentReader& reader) const;
    void to_httplib(HttpResponse response, httplib::Response& out) const;
};

void HttpServer::Impl::to_httplib(HttpResponse response, httplib::Response& out) const {
    out.status = response.status;
    for (const auto& [name, value] : response.headers) out.headers.emplace(name, value);
    if (!response.is_streaming()) {
        out.set_content(std::move(response.body), response.content_type.c_str());
        return;
    }
    out.set_chunked_content_provider(
        response.content_type,
        [producer = std::move(response.producer)](size_t /*offset*/, httplib::DataSink& sink) {
            SinkWriter writer(sink, current_connection);
            try {
                producer(writer);
            } catch (...) {
                return false;  // mid-stream failure: no clean way to say so in HTTP; close
            }
            if (writer.failed()) return false;
            sink.done();
            return true;
        },
        [on_finished = std::move(response.on_finished)](bool completed) {
            if (on_finished) on_finished(completed);
        });
}

HttpRequest HttpServer::Impl::request_of(const httplib::Request& in) const {
    HttpRequest request;
    request.method = in.method;
    request.path = in.path;
    request.remote_address = in.remote_addr;
    request.remote_port = in.remote_port;
    if (current_connection != nullptr) {
        request.connection_probe = [fd = current_connection->socket()] { return socket_alive(fd); };
    }
    for (const auto& [name, value] : in.headers) {
        if (is_pseudo_header(name)) continue;
        request.headers.emplace(name, value);
    }
    for (const auto& [name, value] : in.params) request.query.emplace(name, value);
    return request;
}

bool HttpServer::Impl::refused_before_body(const httplib::Request& in, httplib::Response& out) const {
    Router::Match match = router.match(in.method, in.path);
    if (match.outcome != Router::Outcome::Matched || !*match.guard) return false;
    HttpRequest request = request_of(in);
    request.path_params = std::move(match.path_params);
    std::optional<HttpResponse> refused = (*match.guard)(request);
    if (!refused) return false;
    if (current_connection != nullptr) current_connection->close_after_response();
    refused->headers.emplace("Connection", "close");
    to_httplib(std::move(*refused), out);
    return true;
}

bool HttpServer::Impl::refused_for_header_count(const httplib::Request& in, httplib::Response& out) const {
    size_t count = 0;
    for (const auto& [name, value] : in.headers)
        if (!is_pseudo_header(name)) ++count;
    if (count <= options.max_header_count) return false;
    HttpResponse response = render_error(431,
                                         "Too many request headers: " + std::to_string(count) + ", the limit is " +
                                             std::to_string(options.max_header_count) + " (--max-request-headers)",
                                         request_of(in));
    if (current_connection != nullptr) current_connection->close_after_response();
    response.headers.emplace("Connection", "close");
    to_httplib(std::move(response), out);
    return true;
}

int HttpServer::Impl::continue_or_refuse(const httplib::Request& in, httplib::Response& out) const {
    if (refused_for_header_count(in, out) || refused_before_body(in, out)) return out.status;
    return 100;
}

void HttpServer::Impl::serve(const httplib::Request& in, std::string body, httplib::Response& out,
                             bool guard_passed) const {
    if (current_connection != nullptr) current_connection->end_reading();  // the handler's time is not the client's
    HttpRequest request = request_of(in);
    request.body = std::move(body);
    Router::Match match = router.match(in.method, in.path);
    HttpResponse response;
    switch (match.outcome) {
        case Router::Outcome::NotFound:
            response = render_error(404, "Invalid URL (" + in.method + " " + in.path + ")", request);
            break;
        case Router::Outcome::MethodNotAllowed: {
            std::string allowed;
            for (const std::string& method : match.allowed_methods) {
                allowed += (allowed.empty() ? "" : ", ") + method;
            }
            response = render_error(405, "Method " + in.method + " not allowed for " + in.path, request);
            response.headers.emplace("Allow", allowed);
            break;
        }
        case Router::Outcome::Matched:
            request.path_params = std::move(match.path_params);
            try {
                std::optional<HttpResponse> refused;
                if (!guard_passed && *match.guard) refused = (*match.guard)(request);
                response = refused ? std::move(*refused) : (*match.handler)(request);
            } catch (const std::exception& error) {
                response = render_error(500, std::string("internal error: ") + error.what(), request);
            } catch (...) {
                response = render_error(500, "internal error", request);
            }
            break;
    }
    to_httplib(std::move(response), out);
}

void HttpServer::Impl::serve_with_body(const httplib::Request& in, httplib::Response& out,
                                       const httplib::ContentReader& reader) const {
    // A body declared larger than the limit by Content-Length is refused by httplib (status 413,
    // body skipped). A chunked body has no declared size: read it, but stop keeping it once over
    // the limit, so the connection stays in sync for the next request.
    // A request with neither Content-Length nor Transfer-Encoding has no body (RFC 9112, 6.3), e.g.
    // sgl-model-gateway's POST /flush_cache; httplib's reader would call that a failed read.
    if (!in.has_header("Content-Length") && !in.has_header("Transfer-Encoding")) {
        serve(in, {}, out);
        return;
    }
    if (refused_before_body(in, out)) return;
    std::string body;
    bool too_large = false;
    const bool read_ok = reader([&](const char* data, size_t size) {
        if (too_large || body.size() + size > options.max_body_bytes) {
            too_large = true;
            std::string().swap(body);
            return true;
        }
        body.append(data, size);
        return true;
    });
    if (too_large || (!read_ok && out.status == 413)) {
        const HttpResponse response =
            render_error(413,
                         "Request body too large: the limit is " + std::to_string(options.max_body_bytes) +
                             " bytes (--max-body-bytes)",
                         request_of(in));
        out.headers.clear();
        to_httplib(response, out);
        return;
    }
    if (!read_ok && current_connection != nullptr && current_connection->timed_out() != ReadDeadline::Phase::None) {
        to_httplib(render_error(408, timeout_message(current_connection->timed_out(), options), request_of(in)), out);
        return;
    }
    if (!read_ok) {
        to_httplib(render_error(400, "Could not read the request body", request_of(in)), out);
        return;
    }
    serve(in, std::move(body), out, /*guard_passed=*/true);
}

void HttpServer::Impl::configure() {
    server.new_task_queue = [threads = options.threads] {
        return new AcceptTimingPool(static_cast<size_t>(threads > 0 ? threads : 1));
    };
    server.set_keep_alive_max_count(options.keep_alive_max_requests);
    server.set_keep_alive_timeout(options.keep_alive_timeout.count());
    server.set_read_timeout(options.read_timeout);
    server.set_write_timeout(options.write_timeout);
    server.set_payload_max_length(options.max_body_bytes);
    server.set_tcp_nodelay(true);  // SSE events are small; do not let Nagle hold them back
    server.set_socket_options([this](socket_t sock) {
        int yes = 1;
        ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
        listen_fd = sock;
    });

    // One catch-all per method: routing, path params and 404/405 are ours (router.h).
    const std::string any = ".*";
    auto plain = [this](const httplib::Request& in, httplib::Response& out) { serve(in, {}, out); };
    auto with_body = [this](const httplib::Request& in, httplib::Response& out, const httplib::ContentReader& reader) {
        serve_with_body(in, out, reader);
    };
    server.set_pre_routing_handler([this](const httplib::Request& in, httplib::Response& out) {
        return refused_for_header_count(in, out) ? httplib::Server::HandlerResponse::Handled
                                                 : httplib::Server::HandlerResponse::Unhandled;
    });
    // Without this httplib answers 100 Continue to any request that asks, before a key or a limit is checked.
    server.set_expect_100_continue_handler(
        [this](const httplib::Request& in, httplib::Response& out) { return continue_or_refuse(in, out); });
    server.Get(any, plain);
    server.Options(any, plain);
    server.Post(any, with_body);
    server.Put(any, with_body);
    server.Patch(any, with_body);
    server.Delete(any, with_body);

    // Errors httplib produces itself (malformed request line, URI too long) get our body; ours
    // already have one. A request that missed its read deadline is a 408, not httplib's 400.
    server.set_error_handler(
        httplib::Server::HandlerWithResponse([this](const httplib::Request& in, httplib::Response& out) {
            if (!out.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
            const ReadDeadline::Phase late =
                current_connection != nullptr ? current_connection->timed_out() : ReadDeadline::Phase::None;
            if (late != ReadDeadline::Phase::None) out.status = 408;
            const HttpResponse response =
                late != ReadDeadline::Phase::None
                    ? render_error(408, timeout_message(late, options), request_of(in))
                    : render_error(out.status, "HTTP error " + std::to_string(out.status), request_of(in));
            out.set_content(response.body, response.content_type.c_str());
            return httplib::Server::HandlerResponse::Handled;
        }));
    server.set_exception_handler([this](const httplib::Request& in, httplib::Response& out, std::exception_ptr) {
        out.headers.clear();
        to_httplib(render_error(500, "internal error", request_of(in)), out);
    });
}

HttpServer::HttpServer(HttpServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

HttpServer::~HttpServer() { stop(); }

void HttpServer::route(std::string method, std::string_view path_pattern, HttpHandler handler, HttpGuard guard) {
    impl_->router.add(std::move(method), path_pattern, std::move(handler), std::move(guard));
}

void HttpServer::set_error_renderer(ErrorRenderer renderer) { impl_->render_error = std::move(renderer); }

Status HttpServer::start() {
    if (impl_->listen_thread.joinable()) return Error{"http server: already started"};
    impl_->configure();
    const HttpServerOptions& options = impl_->options;
    if (options.port == 0) {
        impl_->bound_port = impl_->server.bind_to_any_port(options.host);
    } else {
        impl_->bound_port = impl_->server.bind_to_port(options.host, options.port) ? options.port : -1;
    }
    if (impl_->bound_port <= 0) {
        return Error{"http server: cannot listen on " + options.host + ":" + std::to_string(options.port)};
    }
    // httplib listens with a compiled-in backlog of 5; listen() again on the same socket widens it.
    if (impl_->listen_fd >= 0) ::listen(impl_->listen_fd, options.listen_backlog);
    impl_->listen_thread = std::thread([this] { impl_->server.listen_after_bind(); });
    while (!impl_->server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return Ok{};
}

int HttpServer::port() const { return impl_->bound_port; }

bool HttpServer::is_running() const { return impl_->server.is_running(); }

size_t HttpServer::open_connections() const { return impl_->server.open_connections; }

void HttpServer::stop() {
    if (!impl_->listen_thread.joinable()) return;
    impl_->server.stop();                   // closes the listening socket: accept() ends
    impl_->server.wake_idle_connections();  // idle keep-alive connections close
    // listen_after_bind() returns once the pool has finished every connection it holds, which
    // includes requests and streams in flight.
    impl_->listen_thread.join();
}

}  // namespace tempered::http
