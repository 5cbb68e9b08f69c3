// The request, response and streaming types every handler sees. They name no HTTP library, so the
// library under src/http/http_server.cpp can be swapped without touching src/api.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace tempered::http {

// Header names compare case-insensitively (RFC 9110).
struct CaseInsensitiveLess {
    bool operator()(std::string_view a, std::string_view b) const;
    using is_transparent = void;
};
using Headers = std::multimap<std::string, std::string, CaseInsensitiveLess>;

struct HttpRequest {
    std::string method;                              // "GET", "POST", ...
    std::string path;                                // without the query string
    std::map<std::string, std::string> path_params;  // "/v1/models/{model}" -> {"model": ...}
    std::multimap<std::string, std::string> query;
    Headers headers;
    std::string body;
    std::string remote_address;
    int remote_port = 0;

    // The first value of a header, or "" when absent.
    std::string header(std::string_view name) const;
    bool has_header(std::string_view name) const { return headers.find(name) != headers.end(); }

    // For a handler that blocks before it returns (a non-streamed completion): false once the client
    // has closed or reset the connection, so the work can be cancelled. Non-blocking. Call it only
    // from the handler's own thread while the handler runs (it asks the connection's socket).
    bool is_connection_alive() const { return !connection_probe || connection_probe(); }
    std::function<bool()> connection_probe;  // set by the server
};

// What a streaming handler writes to. Both calls are made from the thread that runs the producer.
class StreamWriter {
public:
    virtual ~StreamWriter() = default;
    // Sends one chunk now (no buffering). Returns false once the client is gone: stop producing.
    // An empty chunk is ignored (it would end a chunked body early).
    virtual bool write(std::string_view chunk) = 0;
    // A non-blocking check, for producers that wait a long time between chunks (queued requests,
    // long prefills): false when the client has closed or reset the connection.
    virtual bool is_connection_alive() const = 0;
};

// Runs once, on the connection's thread, after the status line and headers are sent. Returning ends
// the body; the connection stays open for the next request unless a write failed.
using ChunkProducer = std::function<void(StreamWriter& writer)>;
// Runs when the response is destroyed, whether or not the producer ran or finished: `completed` is
// true only when the whole body reached the socket. The place to release per-request resources.
using StreamFinished = std::function<void(bool completed)>;

struct HttpResponse {
    int status = 200;
    Headers headers;
    std::string content_type = "application/json";
    std::string body;
    ChunkProducer producer;  // set: a chunked, streamed body and `body` is ignored
    StreamFinished on_finished;

    bool is_streaming() const { return static_cast<bool>(producer); }

    static HttpResponse json(int status, std::string body);
    static HttpResponse text(int status, std::string body, std::string content_type = "text/plain");
    static HttpResponse streaming(std::string content_type, ChunkProducer producer, StreamFinished on_finished = {});
};

using HttpHandler = std::function<HttpResponse(const HttpRequest& request)>;

// A check a route makes on the request line and headers alone, before the body is read (an API key: a
// client without one must not make the server take in 32 MiB first). A response it returns is sent
// instead of the handler's; when the body was left unread the connection closes after it.
using HttpGuard = std::function<std::optional<HttpResponse>(const HttpRequest& request)>;

}  // namespace tempered::http
