#include "loadgen/request_runner.h"

#include <cstdio>

#include "loadgen/response_fields.h"
#include "loadgen/sse_parser.h"

namespace tempered::loadgen {
namespace {

constexpr size_t kMaxErrorBodyBytes = 64 * 1024;

std::string seconds_text(double seconds) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", seconds);
    return text;
}

// Consumes the body of one response as it arrives and turns it into the record's fields.
class ResponseReader {
public:
    ResponseReader(RequestRecord& record, Endpoint endpoint, bool stream, std::atomic<int64_t>* live_text_chunks)
        : record_(record), endpoint_(endpoint), stream_(stream), live_text_chunks_(live_text_chunks) {}

    void set_status(int status) { status_ = status; }

    // False stops reading (an error event, or a malformed stream).
    bool take(std::string_view bytes, Clock::time_point now) {
        if (status_ != 200 || !stream_) {
            if (body_.size() < kMaxErrorBodyBytes || status_ == 200) body_.append(bytes);
            return true;
        }
        events_.clear();
        parser_.feed(bytes, events_);
        for (const std::string& event : events_) {
            if (event == kDonePayload) {
                done_ = true;
                continue;
            }
            const auto json = nlohmann::json::parse(event, nullptr, /*allow_exceptions=*/false);
            if (json.is_discarded()) return fail("the stream carried an event that is not JSON: " + event.substr(0, 120));
            const PayloadContent content = read_payload(json, endpoint_);
            if (content.error) return fail("error in the stream: " + *content.error);
            if (content.text_bytes > 0) {
                record_.content_times_s.push_back(std::chrono::duration<double>(now - record_.start).count());
                if (live_text_chunks_) ++*live_text_chunks_;
            }
            if (content.prompt_tokens) record_.prompt_tokens = content.prompt_tokens;
            if (content.completion_tokens) record_.completion_tokens = content.completion_tokens;
        }
        return true;
    }

    // After the transport has finished without an error: judge what was received.
    void finish(int status) {
        if (!error_.empty()) return;
        if (status != 200) {
            error_ = describe_http_error(status, body_);
            return;
        }
        if (stream_) {
            if (!done_) error_ = "the stream ended without data: [DONE]";
            return;
        }
        const auto json = nlohmann::json::parse(body_, nullptr, /*allow_exceptions=*/false);
        if (json.is_discarded()) {
            error_ = "the response is not JSON";
            return;
        }
        const PayloadContent content = read_payload(json, endpoint_);
        if (content.error) {
            error_ = *content.error;
            return;
        }
        record_.prompt_tokens = content.prompt_tokens;
        record_.completion_tokens = content.completion_tokens;
    }

    const std::string& error() const { return error_; }

private:
    bool fail(std::string message) {
        error_ = std::move(message);
        return false;
    }

    RequestRecord& record_;
    Endpoint endpoint_;
    bool stream_;
    std::atomic<int64_t>* live_text_chunks_;
    int status_ = 0;
    SseParser parser_;
    std::vector<std::string> events_;
    std::string body_;  // a non-streamed response, or an error response
    bool done_ = false;
    std::string error_;
};

}  // namespace

RequestRecord run_request(HttpSession& session, const RequestSettings& settings, const std::string& prompt,
                          std::chrono::duration<double> timeout, std::atomic<int64_t>* live_text_chunks) {
    const std::string body = generation_body(settings, prompt).dump();
    RequestRecord record;
    ResponseReader reader(record, settings.endpoint, settings.stream, live_text_chunks);
    bool timed_out = false;
    HttpSession::BodyHandlers handlers;
    handlers.on_status = [&](int status) { reader.set_status(status); };
    record.start = Clock::now();
    const auto deadline = record.start + std::chrono::duration_cast<Clock::duration>(timeout);
    handlers.on_bytes = [&](std::string_view bytes) {
        const auto now = Clock::now();
        if (now > deadline) {
            timed_out = true;
            return false;
        }
        return reader.take(bytes, now);
    };
    auto status = session.post_json_streaming(endpoint_route(settings.endpoint), body, handlers);
    record.end = Clock::now();

    if (timed_out || (!status && record.end >= deadline)) {
        record.error = "timed out after " + seconds_text(timeout.count()) + " s";
    } else if (!reader.error().empty()) {
        record.error = reader.error();  // an error event: the receiver stopped the transfer on purpose
    } else if (!status) {
        record.error = status.error().message;
    } else {
        reader.finish(*status);
        record.error = reader.error();
    }
    record.ok = record.error.empty();
    return record;
}

}  // namespace tempered::loadgen
