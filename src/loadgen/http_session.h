// One keep-alive HTTP connection to the server under test, used by one thread at a time. It hides
// cpp-httplib from the rest of src/loadgen, and hands a response body over piece by piece as it
// arrives, so that a streamed response can be timed chunk by chunk.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/result.h"
#include "loadgen/base_url.h"

namespace tempered::loadgen {

struct HttpReply {
    int status = 0;
    std::string body;
};

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

}  // namespace tempered::loadgen
