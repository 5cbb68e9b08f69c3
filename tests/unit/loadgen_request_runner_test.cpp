// run_request against a scripted server on 127.0.0.1 (our HttpServer), so that the client's timing
// and failure handling meet real sockets: events split across writes, a role-only first chunk, error
// statuses and error events, a stream cut short, the timeout, and nothing listening at all.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "http/http_server.h"
#include "loadgen/bench_run.h"
#include "loadgen/request.h"

namespace tempered::loadgen {
namespace {
namespace loadgen_request_runner_test {

using namespace std::chrono_literals;

// A server whose POST routes stream the given pieces with a pause before each.
struct Piece {
    std::chrono::milliseconds pause;
    std::string bytes;
};

class ScriptedServer {
public:
    ScriptedServer() {
        http::HttpServerOptions options;
        options.threads = 8;
        server_ = std::make_unique<http::HttpServer>(options);
    }
    void stream(const std::string& path, std::vector<Piece> pieces) {
        server_->route("POST", path, [pieces](const http::HttpRequest&) {
            return http::HttpResponse::streaming("text/event-stream", [pieces](http::StreamWriter& writer) {
                for (const Piece& piece : pieces) {
                    std::this_thread::sleep_for(piece.pause);
                    if (!writer.write(piece.bytes)) return;
                }
            });
        });
    }
    void reply(const std::string& path, int status, std::string body, std::chrono::milliseconds pause = 0ms) {
        server_->route("POST", path, [status, body, pause](const http::HttpRequest&) {
            std::this_thread::sleep_for(pause);
            return http::HttpResponse::json(status, body);
        });
    }
    BaseUrl start() {
        EXPECT_TRUE(server_->start().ok());
        return BaseUrl{"http://127.0.0.1:" + std::to_string(server_->port()), "", ""};
    }
    http::HttpServer& server() { return *server_; }

private:
    std::unique_ptr<http::HttpServer> server_;
};

const RequestSettings kStreamedCompletion{Endpoint::Completions, "m", 3, true, std::nullopt};
const std::string kUsage = R"(data: {"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3}})"
                           "\n\n";

TEST(LoadgenRequestRunner, TimesTextChunksSplitAcrossWrites) {
    ScriptedServer fake;
    fake.stream(
        "/v1/completions",
        {
            {0ms, "data: {\"choices\":[{\"text\":\"\"}]}\n\n"},  // the first chunk carries no text
            {60ms, "data: {\"choices\":[{\"te"},                 // an event split across two writes
            {20ms, "xt\":\"Hel\"}]}\n\n"},
            {30ms,
             "data: {\"choices\":[{\"text\":\"lo\"}]}\n\n: keep-alive\n\ndata: {\"choices\":[{\"text\":\"!\"}]}\n\n"},
            {0ms, kUsage + "data: [DONE]\n\n"},
        });
    const BaseUrl url = fake.start();
    HttpSession session(url, 10s);
    const RequestRecord record = run_request(session, kStreamedCompletion, "hi", 10s);
    ASSERT_TRUE(record.ok) << record.error;
    ASSERT_EQ(record.content_times_s.size(), 3u);
    ASSERT_TRUE(record.ttft_s());
    EXPECT_GE(*record.ttft_s(), 0.075);  // the empty first chunk did not count; the split event did, once whole
    EXPECT_GE(record.content_times_s[1] - record.content_times_s[0], 0.025);
    EXPECT_LE(record.content_times_s[2] - record.content_times_s[1], 0.02);  // same write: no real gap
    EXPECT_EQ(record.prompt_tokens, 7);
    EXPECT_EQ(record.completion_tokens, 3);
    EXPECT_EQ(record.output_tokens(), 3);
    EXPECT_GE(record.e2e_s(), record.content_times_s.back());
}

TEST(LoadgenRequestRunner, ChatRoleChunkIsNotTheFirstToken) {
    ScriptedServer fake;
    fake.stream("/v1/chat/completions",
                {
                    {0ms, "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"},
                    {80ms, "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n"},
                    {0ms, "data: [DONE]\n\n"},
                });
    const BaseUrl url = fake.start();
    HttpSession session(url, 10s);
    const RequestRecord record = run_request(session, {Endpoint::Chat, "m", 1, true, std::nullopt}, "hi", 10s);
    ASSERT_TRUE(record.ok) << record.error;
    ASSERT_EQ(record.content_times_s.size(), 1u);
    EXPECT_GE(*record.ttft_s(), 0.075);
    EXPECT_FALSE(record.completion_tokens);  // no usage chunk: the count falls back to text chunks
    EXPECT_EQ(record.output_tokens(), 1);
}

TEST(LoadgenRequestRunner, NonStreamedResponse) {
    ScriptedServer fake;
    fake.reply("/v1/completions", 200,
               R"({"choices":[{"text":"abc"}],"usage":{"prompt_tokens":5,"completion_tokens":16}})", 50ms);
    const BaseUrl url = fake.start();
    HttpSession session(url, 10s);
    const RequestRecord record = run_request(session, {Endpoint::Completions, "m", 16, false, std::nullopt}, "hi", 10s);
    ASSERT_TRUE(record.ok) << record.error;
    EXPECT_FALSE(record.ttft_s());  // not measurable without a stream
    EXPECT_EQ(record.completion_tokens, 16);
    EXPECT_EQ(record.prompt_tokens, 5);
    EXPECT_GE(record.e2e_s(), 0.045);
}

TEST(LoadgenRequestRunner, HttpErrorCarriesTheEnvelopeMessage) {
    ScriptedServer fake;
    fake.reply("/v1/completions", 400,
               R"({"error":{"message":"'max_tokens' is too large","type":"invalid_request_error"}})");
    const BaseUrl url = fake.start();
    HttpSession session(url, 10s);
    const RequestRecord record = run_request(session, kStreamedCompletion, "hi", 10s);
    EXPECT_FALSE(record.ok);
    EXPECT_EQ(record.error, "HTTP 400: 'max_tokens' is too large");
}

TEST(LoadgenRequestRunner, ErrorEventInTheStream) {
    ScriptedServer fake;
    fake.stream("/v1/completions",
                {
                    {0ms, "data: {\"choices\":[{\"text\":\"a\"}]}\n\n"},
                    {0ms, "data: {\"error\":{\"message\":\"engine died\",\"type\":\"server_error\"}}\n\n"},
                });
    const BaseUrl url = fake.start();
    HttpSession session(url, 10s);
    const RequestRecord record = run_request(session, kStreamedCompletion, "hi", 10s);
    EXPECT_FALSE(record.ok);
    EXPECT_EQ(record.error, "error in the stream: engine died");
}

TEST(LoadgenRequestRunner, StreamWithoutDoneFails) {
    ScriptedServer fake;
    fake.stream("/v1/completions", {{0ms, "data: {\"choices\":[{\"text\":\"a\"}]}\n\n"}});
    const BaseUrl url = fake.start();
    HttpSession session(url, 10s);
    const RequestRecord record = run_request(session, kStreamedCompletion, "hi", 10s);
    EXPECT_FALSE(record.ok);
    EXPECT_EQ(record.error, "the stream ended without data: [DONE]");
}

TEST(LoadgenRequestRunner, SilentServerTimesOut) {
    ScriptedServer fake;
    fake.reply("/v1/completions", 200, "{}", 1500ms);
    const BaseUrl url = fake.start();
    HttpSession session(url, 200ms);
    const auto start = Clock::now();
    const RequestRecord record =
        run_request(session, {Endpoint::Completions, "m", 1, false, std::nullopt}, "hi", 200ms);
    EXPECT_FALSE(record.ok);
    EXPECT_EQ(record.error, "timed out after 0.2 s");
    EXPECT_LT(Clock::now() - start, 1s);
}

TEST(LoadgenRequestRunner, TricklingStreamTimesOutAtTheDeadline) {
    // Keep-alive comments every 50 ms never leave the read timeout silent; the deadline still holds.
    ScriptedServer fake;
    fake.stream("/v1/completions", std::vector<Piece>(40, Piece{50ms, ": keep-alive\n\n"}));
    const BaseUrl url = fake.start();
    HttpSession session(url, 300ms);
    const auto start = Clock::now();
    const RequestRecord record = run_request(session, kStreamedCompletion, "hi", 300ms);
    EXPECT_FALSE(record.ok);
    EXPECT_EQ(record.error, "timed out after 0.3 s");
    EXPECT_LT(Clock::now() - start, 1s);
}

TEST(LoadgenRequestRunner, NothingListening) {
    ScriptedServer fake;
    const BaseUrl url = fake.start();
    fake.server().stop();  // the port was ours a moment ago; now nothing accepts on it
    HttpSession session(url, 5s);
    const auto start = Clock::now();
    const RequestRecord record = run_request(session, kStreamedCompletion, "hi", 5s);
    EXPECT_FALSE(record.ok);
    EXPECT_EQ(record.error, "could not connect to " + url.origin);
    EXPECT_LT(Clock::now() - start, 2s);
}

TEST(LoadgenLoadDriver, ClosedLoopAtMostConcurrencyInFlight) {
    http::HttpServerOptions options;
    options.threads = 16;
    http::HttpServer server(options);
    std::atomic<int> in_flight{0}, most{0};
    std::mutex mutex;
    std::multiset<std::string> prompts_seen;
    server.route("POST", "/v1/completions", [&](const http::HttpRequest& request) {
        const int now = ++in_flight;
        for (int seen = most.load(); now > seen && !most.compare_exchange_weak(seen, now);) {}
        {
            std::lock_guard lock(mutex);
            prompts_seen.insert(nlohmann::json::parse(request.body)["prompt"].get<std::string>());
        }
        std::this_thread::sleep_for(30ms);
        --in_flight;
        return http::HttpResponse::json(
            200, R"({"choices":[{"text":"x"}],"usage":{"prompt_tokens":1,"completion_tokens":2}})");
    });
    ASSERT_TRUE(server.start().ok());
    const BaseUrl url{"http://127.0.0.1:" + std::to_string(server.port()), "", ""};
    const std::vector<std::string> prompts = {"a", "b", "c", "d", "e", "f", "g"};
    ProgressCounters counters;
    const PhaseResult result =
        run_phase(url, {Endpoint::Completions, "m", 2, false, std::nullopt}, prompts, 3, 10s, &counters);
    ASSERT_EQ(result.records.size(), prompts.size());
    for (const RequestRecord& record : result.records) EXPECT_TRUE(record.ok) << record.error;
    EXPECT_EQ(prompts_seen, std::multiset<std::string>(prompts.begin(), prompts.end()));  // each sent once
    EXPECT_EQ(most.load(), 3);
    EXPECT_EQ(counters.finished, 7);
    EXPECT_EQ(counters.failed, 0);
    EXPECT_EQ(counters.output_tokens, 14);
    EXPECT_GE(result.duration_s, 0.09);  // three rounds of 30 ms: 3 + 3 + 1 requests
}

// --api-key reaches the server as the OpenAI SDK sends it; without one, no Authorization header.
TEST(LoadgenRequestRunner, SendsTheApiKeyAsABearerToken) {
    ScriptedServer fake;
    std::string seen = "unset";
    fake.server().route("POST", "/v1/completions", [&seen](const http::HttpRequest& request) {
        seen = request.header("Authorization");
        return http::HttpResponse::json(
            200, R"({"choices":[{"text":"x"}],"usage":{"prompt_tokens":1,"completion_tokens":1}})");
    });
    BaseUrl url = fake.start();
    const RequestSettings plain{Endpoint::Completions, "m", 1, false, std::nullopt};
    {
        HttpSession session(url, 10s);
        EXPECT_TRUE(run_request(session, plain, "hi", 10s).ok);
        EXPECT_EQ(seen, "");
    }
    url.api_key = "sk-test";
    HttpSession session(url, 10s);
    EXPECT_TRUE(run_request(session, plain, "hi", 10s).ok);
    EXPECT_EQ(seen, "Bearer sk-test");
}

}  // namespace loadgen_request_runner_test
}  // namespace
}  // namespace tempered::loadgen
