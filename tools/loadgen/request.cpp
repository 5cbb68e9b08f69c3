#include "loadgen/request.h"

#include <cstdio>

namespace tempered::loadgen {

// ---- the body ----------------------------------------------------------------------------------

std::string_view endpoint_route(Endpoint endpoint) {
    return endpoint == Endpoint::Chat ? "/v1/chat/completions" : "/v1/completions";
}

std::string_view endpoint_name(Endpoint endpoint) { return endpoint == Endpoint::Chat ? "chat" : "completions"; }

nlohmann::json generation_body(const RequestSettings& settings, const std::string& prompt) {
    nlohmann::json body = {{"model", settings.model}, {"max_tokens", settings.max_tokens}, {"ignore_eos", true}};
    if (settings.endpoint == Endpoint::Chat)
        body["messages"] = nlohmann::json::array({{{"role", "user"}, {"content", prompt}}});
    else
        body["prompt"] = prompt;
    if (settings.temperature) body["temperature"] = *settings.temperature;
    if (settings.stream) {
        body["stream"] = true;
        body["stream_options"] = {{"include_usage", true}};
    }
    return body;
}

// ---- the response ------------------------------------------------------------------------------

namespace {

size_t string_bytes(const nlohmann::json& object, const char* key) {
    const auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get_ref<const std::string&>().size() : 0;
}

std::optional<int64_t> integer_field(const nlohmann::json& object, const char* key) {
    const auto it = object.find(key);
    if (it == object.end() || !it->is_number_integer()) return std::nullopt;
    return it->get<int64_t>();
}

size_t choice_text_bytes(const nlohmann::json& choice, Endpoint endpoint) {
    if (!choice.is_object()) return 0;
    if (endpoint == Endpoint::Completions) return string_bytes(choice, "text");
    size_t bytes = 0;
    for (const char* part : {"delta", "message"}) {
        const auto it = choice.find(part);
        if (it == choice.end() || !it->is_object()) continue;
        for (const char* key : {"content", "reasoning_content", "reasoning"}) bytes += string_bytes(*it, key);
    }
    return bytes;
}

}  // namespace

PayloadContent read_payload(const nlohmann::json& payload, Endpoint endpoint) {
    PayloadContent content;
    content.error = error_message(payload);
    if (!payload.is_object()) return content;
    if (const auto it = payload.find("choices"); it != payload.end() && it->is_array())
        for (const auto& choice : *it) content.text_bytes += choice_text_bytes(choice, endpoint);
    if (const auto it = payload.find("usage"); it != payload.end() && it->is_object()) {
        content.prompt_tokens = integer_field(*it, "prompt_tokens");
        content.completion_tokens = integer_field(*it, "completion_tokens");
    }
    return content;
}

void SseParser::feed(std::string_view bytes, std::vector<std::string>& events) {
    while (!bytes.empty()) {
        const size_t newline = bytes.find('\n');
        if (newline == std::string_view::npos) {
            line_.append(bytes);
            return;
        }
        line_.append(bytes.substr(0, newline));
        bytes.remove_prefix(newline + 1);
        std::string line = std::move(line_);
        line_.clear();
        if (!line.empty() && line.back() == '\r') line.pop_back();
        take_line(line, events);
    }
}

void SseParser::take_line(std::string_view line, std::vector<std::string>& events) {
    if (line.empty()) {  // a blank line dispatches the event, if it had data
        if (has_data_) events.push_back(std::move(data_));
        data_.clear();
        has_data_ = false;
        return;
    }
    if (line.front() == ':') return;  // a comment
    const size_t colon = line.find(':');
    const std::string_view field = line.substr(0, colon);
    if (field != "data") return;
    std::string_view value = colon == std::string_view::npos ? std::string_view{} : line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (has_data_) data_.push_back('\n');
    data_.append(value);
    has_data_ = true;
}

// ---- sending -----------------------------------------------------------------------------------

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
            if (json.is_discarded())
                return fail("the stream carried an event that is not JSON: " + event.substr(0, 120));
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

Result<int64_t> served_prompt_tokens(HttpSession& session, const RequestSettings& settings, const std::string& text) {
    RequestSettings probe = settings;
    probe.stream = false;
    probe.max_tokens = 1;
    auto json = json_reply(session.post_json(endpoint_route(probe.endpoint), generation_body(probe, text).dump()),
                           "POST " + std::string(endpoint_route(probe.endpoint)));
    if (!json) return json.error();
    const PayloadContent content = read_payload(*json, probe.endpoint);
    if (!content.prompt_tokens) return Error{"the response has no usage.prompt_tokens"};
    return *content.prompt_tokens;
}

}  // namespace tempered::loadgen
