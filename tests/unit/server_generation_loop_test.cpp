// The generation loop behind both endpoints, with a plain builder and engine streams fed by hand:
// what reaches the client, what is cancelled, counted and logged when it finishes or walks away.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/generation_loop.h"

namespace tempered {
namespace {
namespace server_generation_loop_test {

using namespace std::chrono_literals;

// Chunks {"open": i}, {"text": ...}; usage {"completion_tokens": n}; body {"text": all of it}.
class PlainBuilder final : public ResponseBuilder {
public:
    explicit PlainBuilder(bool stream) : stream_(stream) {}
    std::vector<nlohmann::json> opening_chunks() override { return {{{"open", 0}}}; }
    std::vector<nlohmann::json> on_delta(const ChoiceDelta& delta) override {
        text_ += delta.text;
        if (!stream_ || delta.text.empty()) return {};
        return {nlohmann::json{{"text", delta.text}}};
    }
    std::vector<nlohmann::json> closing_chunks(const api::Usage& usage, bool include_usage) override {
        if (!include_usage) return {};
        return {{{"completion_tokens", usage.completion_tokens}}};
    }
    nlohmann::json final_body(const api::Usage& usage) override {
        return {{"text", text_}, {"prompt_tokens", usage.prompt_tokens}};
    }

private:
    bool stream_;
    std::string text_;
};

// Takes `accept` writes, then reports the client gone.
class FakeWriter final : public http::StreamWriter {
public:
    explicit FakeWriter(size_t accept) : accept_(accept) {}
    bool write(std::string_view chunk) override {
        if (written.size() == accept_) return false;
        written.emplace_back(chunk);
        return true;
    }
    bool is_connection_alive() const override { return written.size() < accept_; }
    std::vector<std::string> written;

private:
    size_t accept_;
};

GenerationEvent text_event(std::string text, std::optional<FinishReason> finish = std::nullopt) {
    GenerationEvent event;
    ChoiceDelta delta;
    delta.text = std::move(text);
    delta.tokens = {7};
    delta.finish = finish;
    event.deltas.push_back(std::move(delta));
    return event;
}

struct Fixture {
    ServingMetrics metrics{"m", "f16"};
    RequestLog log{/*json=*/true};
    std::shared_ptr<GenerationStream> engine = std::make_shared<GenerationStream>();

    GenerationJob job(bool stream, bool include_usage = false) {
        GenerationJob out;
        out.streams = std::make_shared<StreamSet>();
        out.streams->add(engine, 0, /*prompt_tokens=*/5);
        out.builder = std::make_unique<PlainBuilder>(stream);
        out.stream = stream;
        out.include_usage = include_usage;
        out.sampling = {{"temperature", 0.5}};
        out.endpoint = "test";
        out.request_id = "req-1";
        out.received = std::chrono::steady_clock::now();
        return out;
    }
    double counter(const std::string& name) const {
        const std::string text = metrics.render();
        const size_t at = text.find("\n" + name + " ");
        return std::stod(text.substr(text.find(' ', at + 1)));
    }
    double aborted() const {
        const std::string text = metrics.render();
        const size_t at = text.find("\ntempered:requests_aborted_total");
        return std::stod(text.substr(text.find(' ', at + 1)));
    }
};

// The request-log line (JSON) that a call wrote to stderr.
nlohmann::json log_line(const std::string& stderr_text) {
    const size_t start = stderr_text.find("{\"cached_tokens\"");
    EXPECT_NE(start, std::string::npos) << stderr_text;
    return nlohmann::json::parse(stderr_text.substr(start, stderr_text.find('\n', start) - start));
}

TEST(GenerationLoop, StreamsOpeningDeltasUsageThenDoneAndLogsOnce) {
    Fixture fixture;
    fixture.engine->push(text_event("Hel"));
    fixture.engine->push(text_event("lo", FinishReason::Length));
    GenerationEvent done;
    done.done = true;
    done.usage = {5, 2, 2};
    fixture.engine->push(done);
    http::HttpRequest request;
    const http::HttpResponse response = run_generation(fixture.job(true, true), request, fixture.metrics, fixture.log);
    ASSERT_TRUE(response.is_streaming());
    FakeWriter writer(100);
    ::testing::internal::CaptureStderr();
    response.producer(writer);
    const nlohmann::json entry = log_line(::testing::internal::GetCapturedStderr());
    ASSERT_EQ(writer.written.size(), 5u);
    EXPECT_EQ(writer.written[0], R"(data: {"open":0,"sampling":{"temperature":0.5}})"
                                 "\n\n");
    EXPECT_EQ(writer.written[1], "data: {\"text\":\"Hel\"}\n\n");
    EXPECT_EQ(writer.written[3], "data: {\"completion_tokens\":2}\n\n");
    EXPECT_EQ(writer.written[4], "data: [DONE]\n\n");
    EXPECT_EQ(entry["outcome"], "length");
    EXPECT_EQ(entry["cached_tokens"], 2);
    EXPECT_GE(entry["ttft_s"].get<double>(), 0.0);
    EXPECT_EQ(fixture.aborted(), 0);
}

TEST(GenerationLoop, ClientLeavingMidStreamCancelsCountsAndLogsWhatWasSpent) {
    Fixture fixture;
    for (const char* piece : {"a", "b", "c", "d"}) fixture.engine->push(text_event(piece));
    http::HttpRequest request;
    const http::HttpResponse response = run_generation(fixture.job(true), request, fixture.metrics, fixture.log);
    FakeWriter writer(3);  // the opening chunk and two deltas, then the client is gone
    ::testing::internal::CaptureStderr();
    response.producer(writer);
    const nlohmann::json entry = log_line(::testing::internal::GetCapturedStderr());
    EXPECT_TRUE(fixture.engine->cancelled());
    EXPECT_EQ(fixture.aborted(), 1);
    EXPECT_EQ(entry["outcome"], "aborted");
    EXPECT_EQ(entry["id"], "req-1");
    EXPECT_EQ(entry["endpoint"], "test");
    EXPECT_EQ(entry["prompt_tokens"], 5);
    EXPECT_EQ(entry["completion_tokens"], 3);  // two sent, the third failed to send
    EXPECT_GE(entry["ttft_s"].get<double>(), 0.0);
}

TEST(GenerationLoop, WholeResponseGathersTheBodyAndReportsSampling) {
    Fixture fixture;
    fixture.engine->push(text_event("Hi", FinishReason::Stop));
    GenerationEvent done;
    done.done = true;
    done.usage = {5, 0, 1};
    fixture.engine->push(done);
    http::HttpRequest request;
    ::testing::internal::CaptureStderr();
    const http::HttpResponse response = run_generation(fixture.job(false), request, fixture.metrics, fixture.log);
    const nlohmann::json entry = log_line(::testing::internal::GetCapturedStderr());
    ASSERT_FALSE(response.is_streaming());
    EXPECT_EQ(response.status, 200);
    EXPECT_EQ(response.body, R"({"prompt_tokens":5,"sampling":{"temperature":0.5},"text":"Hi"})");
    EXPECT_EQ(entry["outcome"], "stop");
    EXPECT_EQ(entry["completion_tokens"], 1);
}

TEST(GenerationLoop, WholeResponseWhoseClientLeftIsCancelled) {
    Fixture fixture;  // the engine says nothing; the client is gone at the first look
    http::HttpRequest request;
    request.connection_probe = [] { return false; };
    ::testing::internal::CaptureStderr();
    const http::HttpResponse response = run_generation(fixture.job(false), request, fixture.metrics, fixture.log);
    const nlohmann::json entry = log_line(::testing::internal::GetCapturedStderr());
    EXPECT_EQ(response.status, 400);
    EXPECT_TRUE(fixture.engine->cancelled());
    EXPECT_EQ(fixture.aborted(), 1);
    EXPECT_EQ(entry["outcome"], "aborted");
    EXPECT_EQ(entry["prompt_tokens"], 5);
}

TEST(GenerationLoop, EngineErrorMidStreamIsAnErrorEventThenDone) {
    Fixture fixture;
    GenerationEvent failed;
    failed.done = true;
    failed.error = "out of KV blocks";
    fixture.engine->push(failed);
    http::HttpRequest request;
    const http::HttpResponse response = run_generation(fixture.job(true, true), request, fixture.metrics, fixture.log);
    FakeWriter writer(100);
    ::testing::internal::CaptureStderr();
    response.producer(writer);
    const nlohmann::json entry = log_line(::testing::internal::GetCapturedStderr());
    ASSERT_EQ(writer.written.size(), 3u);  // opening, error, [DONE]: no usage chunk
    EXPECT_NE(writer.written[1].find("out of KV blocks"), std::string::npos);
    EXPECT_EQ(writer.written[2], "data: [DONE]\n\n");
    EXPECT_EQ(entry["outcome"], "error");
    EXPECT_EQ(fixture.aborted(), 0);
}

// --request-timeout: a deadline already past ends the request at the first look, whatever the engine
// is still sending; it is cancelled there, answered 408 (a stream: an error event, then [DONE]),
// counted and logged as a timeout, not as an abort.
TEST(GenerationLoop, PastItsDeadlineAStreamGetsATimeoutEventThenDone) {
    Fixture fixture;
    fixture.engine->push(text_event("a"));
    GenerationJob job = fixture.job(true, true);
    job.timeout_seconds = 1;
    job.deadline = job.received - 1ms;
    http::HttpRequest request;
    const http::HttpResponse response = run_generation(std::move(job), request, fixture.metrics, fixture.log);
    FakeWriter writer(100);
    ::testing::internal::CaptureStderr();
    response.producer(writer);
    const nlohmann::json entry = log_line(::testing::internal::GetCapturedStderr());
    ASSERT_EQ(writer.written.size(), 3u);  // opening, the timeout error, [DONE]: no usage chunk
    const nlohmann::json error = nlohmann::json::parse(writer.written[1].substr(6))["error"];
    EXPECT_EQ(error["code"], "request_timeout");
    EXPECT_EQ(error["type"], "timeout_error");
    EXPECT_EQ(writer.written[2], "data: [DONE]\n\n");
    EXPECT_TRUE(fixture.engine->cancelled());
    EXPECT_EQ(entry["outcome"], "timeout");
    EXPECT_EQ(fixture.counter("tempered:request_timeouts_total"), 1);
    EXPECT_EQ(fixture.aborted(), 0);
}

TEST(GenerationLoop, WholeResponsePastItsDeadlineIs408) {
    Fixture fixture;  // the engine never answers: the request would wait for ever without the deadline
    GenerationJob job = fixture.job(false);
    job.timeout_seconds = 0.2;
    job.deadline = job.received + 200ms;
    http::HttpRequest request;
    ::testing::internal::CaptureStderr();
    const http::HttpResponse response = run_generation(std::move(job), request, fixture.metrics, fixture.log);
    const nlohmann::json entry = log_line(::testing::internal::GetCapturedStderr());
    EXPECT_EQ(response.status, 408);
    EXPECT_EQ(nlohmann::json::parse(response.body)["error"]["code"], "request_timeout");
    EXPECT_TRUE(fixture.engine->cancelled());
    EXPECT_EQ(entry["outcome"], "timeout");
    EXPECT_EQ(fixture.counter("tempered:request_timeouts_total"), 1);
}

}  // namespace server_generation_loop_test
}  // namespace
}  // namespace tempered
