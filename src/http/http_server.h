// HttpServer: our own small interface over the HTTP library (cpp-httplib today). Handlers take an
// HttpRequest and return an HttpResponse, or a streaming one whose ChunkProducer writes chunks and
// learns from StreamWriter when the client has gone. The server renders its own errors (404, 405, 413,
// 500) through an ErrorRenderer so that src/api can make them OpenAI-shaped.
//
// Threading: one thread per open connection (cpp-httplib's model), taken from a pool of
// `HttpServerOptions::threads`. A handler and its producer run on that thread and may block; a
// keep-alive connection holds its thread while idle, so size the pool for the clients' connection
// pools, not for the number of requests in flight. Slow clients hold a thread only until their
// request's deadline (header_timeout, body_timeout), idle ones until keep_alive_timeout, and a client
// that stops reading until write_timeout; so slowloris clients holding every thread free them within
// about one header_timeout. Not bounded: clients that keep many connections busy with complete, cheap
// requests (a keep-alive /health every 29 s on each) hold their threads as any client may; against one
// address, --max-connections-per-client; against many, a proxy or the pool size.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/result.h"
#include "http/http_types.h"

namespace tempered::http {

struct HttpServerOptions {
    std::string host = "127.0.0.1";
    int port = 0;               // 0: an ephemeral port, see HttpServer::port()
    int threads = 512;          // open connections served at once; more wait in a queue
    int listen_backlog = 1024;  // connections the kernel queues before accept()
    // SDK clients pool connections (httpx keeps them 5 s by default). The server must keep them at
    // least as long, or a client reuses a connection the server is closing and the request fails.
    size_t keep_alive_max_requests = 100000;
    std::chrono::seconds keep_alive_timeout{30};
    // Slow clients. A connection holds its thread while a request trickles in, so each part of a request
    // has a deadline, not only each read: past it the connection gets 408 and is closed.
    // The request line and headers (a few KB) within header_timeout of their first byte, or of accept for
    // a connection's first request (time queued for a thread counts). 10 s is ample on any real link
    // (nginx and uvicorn wait about as long) and cuts a client that trickles headers byte by byte.
    std::chrono::milliseconds header_timeout{10000};
    // The whole body. 30 s carries a chat body (tens of KB) over any link and one at the 32 MiB limit over
    // ~9 Mbit/s; an operator taking huge bodies over slow links raises it.
    std::chrono::milliseconds body_timeout{30000};
    std::chrono::milliseconds read_timeout{30000};  // one wait for bytes, within the deadlines above
    // A write that makes no progress for this long fails (--stream-stall-timeout): a client that stops
    // reading its stream is cut, so its request is cancelled and its KV freed. 30 s outlasts a phone's
    // network handover or a TCP retransmission back-off; the engine's queue is bounded meanwhile
    // (engine/generation.h).
    std::chrono::milliseconds write_timeout{30000};
    // Connections one remote IP may hold open; past it a new one gets 429 and is closed at once. 0: no
    // limit (the default: routers, gateways and tests reach us from one address).
    size_t max_connections_per_client = 0;
    int client_ipv6_prefix = 64;        // an IPv6 client is counted by this prefix of its address
    size_t max_body_bytes = 32u << 20;  // larger bodies get 413
    // Request headers past this many get 431 and the connection closes (--max-request-headers): each one is
    // kept and scanned per request. Apache's LimitRequestFields default; a browser sends about 20.
    size_t max_header_count = 100;
};

// Renders an error the server itself produces (404 unknown path, 405, 413, 431, 400 malformed HTTP,
// 500 handler threw) into a response. `request`: its method, path and headers (all empty when the error comes
// before a request was read), so a route family with its own error envelope has it here too, and an allowed
// origin gets its CORS headers on these errors as on any answer.
using ErrorRenderer = std::function<HttpResponse(int status, std::string_view message, const HttpRequest& request)>;
// The default renderer: {"error":{"message","type","param":null,"code":null}}.
HttpResponse default_error_response(int status, std::string_view message, const HttpRequest& request);

class HttpServer {
public:
    explicit HttpServer(HttpServerOptions options = {});
    ~HttpServer();  // stop()
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    // Register before start(). Pattern segments `{name}` become HttpRequest::path_params.
    // `guard` (optional) runs before the body is read, see HttpGuard.
    void route(std::string method, std::string_view path_pattern, HttpHandler handler, HttpGuard guard = {});
    void set_error_renderer(ErrorRenderer renderer);

    // Binds and starts accepting on a background thread; returns once connections are served.
    Status start();
    int port() const;  // the bound port, valid after start()
    bool is_running() const;

    // Graceful stop: stops accepting, closes idle keep-alive connections, lets requests in flight
    // (streams included) finish, then returns. A producer that never returns blocks stop().
    void stop();

    // Connections currently open (for tests and metrics).
    size_t open_connections() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace tempered::http
