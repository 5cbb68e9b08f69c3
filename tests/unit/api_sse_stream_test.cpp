// The pattern an endpoint uses to stream a generation: a producer that waits on the request's event
// queue with a timeout, writes one SSE event per delta, and between events checks its client, so a
// closed tab cancels the generation. A fake queue stands in for the engine's GenerationStream.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "api/responses.h"
#include "api/sse.h"
#include "http/http_server.h"
#include "http/httplib_include.h"

namespace tempered::api {
namespace {
namespace api_sse_stream_test {

using namespace std::chrono_literals;

// Stands in for the engine's GenerationStream: text pieces, then the end.
class FakeGeneration {
public:
    void push(std::optional<std::string> piece) {
        {
            std::lock_guard lock(mutex_);
            pieces_.push_back(std::move(piece));
        }
        ready_.notify_all();
    }
    // The next piece (nullopt inside: the end), or nothing within `timeout`.
    std::optional<std::optional<std::string>> next(std::chrono::milliseconds timeout) {
        std::unique_lock lock(mutex_);
        if (!ready_.wait_for(lock, timeout, [&] { return !pieces_.empty(); })) return std::nullopt;
        auto piece = std::move(pieces_.front());
        pieces_.pop_front();
        return piece;
    }
    std::atomic<bool> cancelled{false};

private:
    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<std::optional<std::string>> pieces_;
};

http::HttpResponse stream_chat(FakeGeneration& generation, bool include_usage) {
    return sse_response([&generation, include_usage](http::StreamWriter& writer) {
        const ResponseMeta meta = make_chat_meta("smollm", "fp_test");
        bool first = true;
        int completion_tokens = 0;
        while (true) {
            const auto event = generation.next(20ms);
            if (!event) {  // nothing yet: is anyone still listening?
                if (!writer.is_connection_alive()) {
                    generation.cancelled = true;
                    return;
                }
                continue;
            }
            ChatChunkChoice choice;
            choice.delta.include_role = first;
            first = false;
            if (*event) {
                choice.delta.content = **event;
                ++completion_tokens;
            } else {
                choice.finish_reason = FinishReason::Stop;
            }
            if (!writer.write(sse_json(chat_chunk_json(meta, {choice}, include_usage)))) {
                generation.cancelled = true;
                return;
            }
            if (!*event) break;
        }
        if (include_usage) writer.write(sse_json(chat_usage_chunk_json(meta, {3, completion_tokens, 0})));
        writer.write(sse_data("[DONE]"));
    });
}

// Splits an SSE body into its data payloads.
std::vector<std::string> data_payloads(const std::string& body) {
    std::vector<std::string> payloads;
    size_t start = 0;
    while (true) {
        const size_t end = body.find("\n\n", start);
        if (end == std::string::npos) break;
        const std::string event = body.substr(start, end - start);
        if (event.rfind("data: ", 0) == 0) payloads.push_back(event.substr(6));
        start = end + 2;
    }
    return payloads;
}

TEST(SseStream, ChatChunksThenUsageThenDone) {
    FakeGeneration generation;
    http::HttpServer server(http::HttpServerOptions{.threads = 8});
    server.set_error_renderer([](int status, std::string_view message, const http::HttpRequest& /*request*/) {
        return http_error_response(status, message);
    });
    server.route("POST", "/v1/chat/completions",
                 [&](const http::HttpRequest&) { return stream_chat(generation, /*include_usage=*/true); });
    ASSERT_TRUE(server.start().ok());
    std::thread engine([&] {
        for (const char* piece : {"Hel", "lo"}) {
            std::this_thread::sleep_for(30ms);  // slower than the producer's poll
            generation.push(std::string(piece));
        }
        generation.push(std::nullopt);
    });
    httplib::Client client("127.0.0.1", server.port());
    auto got = client.Post("/v1/chat/completions", "{}", "application/json");
    engine.join();
    ASSERT_TRUE(got);
    EXPECT_EQ(got->status, 200);
    EXPECT_EQ(got->get_header_value("Content-Type"), "text/event-stream");
    const std::vector<std::string> payloads = data_payloads(got->body);
    ASSERT_EQ(payloads.size(), 5u) << got->body;
    const auto first = nlohmann::json::parse(payloads[0]);
    EXPECT_EQ(first["object"], "chat.completion.chunk");
    EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
    EXPECT_EQ(first["choices"][0]["delta"]["content"], "Hel");
    EXPECT_TRUE(first["usage"].is_null());
    EXPECT_FALSE(nlohmann::json::parse(payloads[1])["choices"][0]["delta"].contains("role"));
    EXPECT_EQ(nlohmann::json::parse(payloads[2])["choices"][0]["finish_reason"], "stop");
    const auto usage = nlohmann::json::parse(payloads[3]);
    EXPECT_EQ(usage["choices"], nlohmann::json::array());
    EXPECT_EQ(usage["usage"]["completion_tokens"], 2);
    EXPECT_EQ(payloads[4], "[DONE]");
    EXPECT_EQ(first["id"], usage["id"]);  // one id for the whole stream
    EXPECT_FALSE(generation.cancelled);
}

TEST(SseStream, ClientGoneCancelsTheGeneration) {
    FakeGeneration generation;
    http::HttpServer server(http::HttpServerOptions{.threads = 8});
    server.route("GET", "/stream", [&](const http::HttpRequest&) { return stream_chat(generation, false); });
    ASSERT_TRUE(server.start().ok());
    generation.push(std::string("first"));  // then nothing more: the producer waits and polls
    {
        httplib::Client client("127.0.0.1", server.port());
        auto got = client.Get("/stream", [](const char*, size_t) { return false; });  // leave after one event
        EXPECT_FALSE(got);
    }
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (!generation.cancelled && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
    EXPECT_TRUE(generation.cancelled);
}

}  // namespace api_sse_stream_test
}  // namespace
}  // namespace tempered::api
