#include "http/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>

#include "http/httplib_include.h"
#include "http/router.h"

namespace tempered::http {
namespace {

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

// One accepted connection as an httplib::Stream. We serve connections ourselves (see
// TrackingServer) so that waiting for the next keep-alive request also wakes on stop(), and so that
// handlers can ask whether their client is still there.
class ConnectionStream final : public httplib::Stream {
public:
    ConnectionStream(int fd, std::chrono::milliseconds read_timeout, std::chrono::milliseconds write_timeout)
        : fd_(fd), read_timeout_(read_timeout), write_timeout_(write_timeout) {}

    bool has_buffered_input() const { return begin_ < end_; }

    bool is_readable() const override { return has_buffered_input() || wait_for(fd_, POLLIN, read_timeout_); }
    bool is_writable() const override { return wait_for(fd_, POLLOUT, write_timeout_) && socket_alive(fd_); }

    ssize_t read(char* out, size_t size) override {
        if (!has_buffered_input()) {
            if (!wait_for(fd_, POLLIN, read_timeout_)) return -1;
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

    ssize_t write(const char* data, size_t size) override {
        if (!is_writable()) return -1;
        while (true) {
            const ssize_t sent = ::send(fd_, data, size, MSG_NOSIGNAL);
            if (sent < 0 && errno == EINTR) continue;
            return sent < 0 ? -1 : sent;
        }
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
    std::array<char, 4096> buffer_{};
    size_t begin_ = 0;
    size_t end_ = 0;
};

// The connection the current thread serves: httplib runs a connection's requests, handlers and
// content providers on the thread that called process_and_close_socket.
thread_local const ConnectionStream* current_connection = nullptr;

class SinkWriter final : public StreamWriter {
public:
    SinkWriter(httplib::DataSink& sink, int fd) : sink_(sink), fd_(fd) {}

    bool write(std::string_view chunk) override {
        if (failed_) return false;
        if (chunk.empty()) return is_connection_alive();
        // cpp-httplib's write checks the socket (poll + peek) before each send.
        if (!sink_.write(chunk.data(), chunk.size())) failed_ = true;
        return !failed_;
    }
    bool is_connection_alive() const override {
        if (!failed_ && !socket_alive(fd_)) failed_ = true;
        return !failed_;
    }
    bool failed() const { return failed_; }

private:
    httplib::DataSink& sink_;
    int fd_;
    mutable bool failed_ = false;
};

std::string_view error_type_for(int status) { return status < 500 ? "invalid_request_error" : "server_error"; }

}  // namespace

HttpResponse default_error_response(int status, std::string_view message) {
    nlohmann::json body = {
        {"error", {{"message", message}, {"type", error_type_for(status)}, {"param", nullptr}, {"code", nullptr}}}};
    return HttpResponse::json(status, body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

// httplib::Server whose per-connection loop is ours: httplib parses requests and writes responses
// (process_request), we decide when to wait for the next request and when to give up on it.
class TrackingServer final : public httplib::Server {
public:
    TrackingServer(std::chrono::milliseconds read_timeout, std::chrono::milliseconds write_timeout)
        : read_timeout_(read_timeout), write_timeout_(write_timeout) {
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
        ConnectionStream stream(sock, read_timeout_, write_timeout_);
        current_connection = &stream;
        bool ok = false;
        for (size_t remaining = keep_alive_max_count_;
             remaining > 0 && svr_sock_ != INVALID_SOCKET && wait_for_request(stream); --remaining) {
            bool connection_closed = false;
            ok = process_request(stream, /*close_connection=*/remaining == 1, connection_closed, nullptr);
            if (!ok || connection_closed) break;
        }
        current_connection = nullptr;
        ::shutdown(sock, SHUT_RDWR);
        ::close(sock);
        --open_connections;
        return ok;
    }

    // True when request bytes are waiting; false on keep-alive timeout, peer close or stop().
    bool wait_for_request(const ConnectionStream& stream) const {
        if (stream.has_buffered_input()) return true;  // a pipelined request
        pollfd entries[2] = {{stream.socket(), POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
        const int timeout_ms = static_cast<int>(keep_alive_timeout_sec_ * 1000);
        while (true) {
            const int ready = ::poll(entries, stop_pipe_[0] >= 0 ? 2 : 1, timeout_ms);
            if (ready < 0 && errno == EINTR) continue;
            if (ready <= 0 || (entries[1].revents & POLLIN)) return false;
            return (entries[0].revents & POLLIN) != 0;
        }
    }

    std::chrono::milliseconds read_timeout_;
    std::chrono::milliseconds write_timeout_;
    int stop_pipe_[2] = {-1, -1};
};

struct HttpServer::Impl {
    explicit Impl(HttpServerOptions options_in) : options(std::move(options_in)) {}

    HttpServerOptions options;
    Router router;
    ErrorRenderer render_error = default_error_response;
    TrackingServer server{options.read_timeout, options.write_timeout};
    std::thread listen_thread;
    std::atomic<int> listen_fd{-1};
    int bound_port = -1;

    void configure();
    void serve(const httplib::Request& in, std::string body, httplib::Response& out) const;
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
            SinkWriter writer(sink, current_connection ? current_connection->socket() : -1);
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

void HttpServer::Impl::serve(const httplib::Request& in, std::string body, httplib::Response& out) const {
    HttpRequest request;
    request.method = in.method;
    request.path = in.path;
    request.body = std::move(body);
    request.remote_address = in.remote_addr;
    request.remote_port = in.remote_port;
    if (current_connection != nullptr) {
        request.connection_probe = [fd = current_connection->socket()] { return socket_alive(fd); };
    }
    for (const auto& [name, value] : in.headers) {
        // httplib adds these pseudo-headers itself; they are not the client's.
        if (name == "REMOTE_ADDR" || name == "REMOTE_PORT" || name == "LOCAL_ADDR" || name == "LOCAL_PORT") {
            continue;
        }
        request.headers.emplace(name, value);
    }
    for (const auto& [name, value] : in.params) request.query.emplace(name, value);

    Router::Match match = router.match(in.method, in.path);
    HttpResponse response;
    switch (match.outcome) {
        case Router::Outcome::NotFound:
            response = render_error(404, "Invalid URL (" + in.method + " " + in.path + ")");
            break;
        case Router::Outcome::MethodNotAllowed: {
            std::string allowed;
            for (const std::string& method : match.allowed_methods) {
                allowed += (allowed.empty() ? "" : ", ") + method;
            }
            response = render_error(405, "Method " + in.method + " not allowed for " + in.path);
            response.headers.emplace("Allow", allowed);
            break;
        }
        case Router::Outcome::Matched:
            request.path_params = std::move(match.path_params);
            try {
                response = (*match.handler)(request);
            } catch (const std::exception& error) {
                response = render_error(500, std::string("internal error: ") + error.what());
            } catch (...) {
                response = render_error(500, "internal error");
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
            render_error(413, "Request body too large: the limit is " + std::to_string(options.max_body_bytes) +
                                  " bytes (--max-body-bytes)");
        out.headers.clear();
        to_httplib(response, out);
        return;
    }
    if (!read_ok) {
        to_httplib(render_error(400, "Could not read the request body"), out);
        return;
    }
    serve(in, std::move(body), out);
}

void HttpServer::Impl::configure() {
    server.new_task_queue = [threads = options.threads] {
        return new httplib::ThreadPool(static_cast<size_t>(threads > 0 ? threads : 1));
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
    server.Get(any, plain);
    server.Options(any, plain);
    server.Post(any, with_body);
    server.Put(any, with_body);
    server.Patch(any, with_body);
    server.Delete(any, with_body);

    // Errors httplib produces itself (malformed request line, URI too long) get our body; ours
    // already have one.
    server.set_error_handler(
        httplib::Server::HandlerWithResponse([this](const httplib::Request&, httplib::Response& out) {
            if (!out.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
            const HttpResponse response = render_error(out.status, "HTTP error " + std::to_string(out.status));
            out.set_content(response.body, response.content_type.c_str());
            return httplib::Server::HandlerResponse::Handled;
        }));
    server.set_exception_handler([this](const httplib::Request&, httplib::Response& out, std::exception_ptr) {
        out.headers.clear();
        to_httplib(render_error(500, "internal error"), out);
    });
}

HttpServer::HttpServer(HttpServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

HttpServer::~HttpServer() { stop(); }

void HttpServer::route(std::string method, std::string_view path_pattern, HttpHandler handler) {
    impl_->router.add(std::move(method), path_pattern, std::move(handler));
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
