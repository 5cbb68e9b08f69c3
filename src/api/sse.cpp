#include "api/sse.h"

#include <utility>

namespace tempered::api {

std::string sse_data(std::string_view payload) {
    std::string event;
    event.reserve(payload.size() + 8);
    size_t start = 0;
    while (true) {
        const size_t newline = payload.find('\n', start);
        event += "data: ";
        event += payload.substr(start, newline == std::string_view::npos ? std::string_view::npos : newline - start);
        event += '\n';
        if (newline == std::string_view::npos) break;
        start = newline + 1;
    }
    event += '\n';
    return event;
}

std::string dump_json(const nlohmann::json& value) {
    return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

// U+0085, U+2028 and U+2029 written as JSON escapes. The SSE spec ends lines at CR and LF only, but clients that
// split a stream with Python's str.splitlines (httpx's iter_lines among them) also end a line at these three, and
// a model may write any of them: raw, they cut an event in two. JSON's own text is ASCII, so their UTF-8 bytes can
// only be inside a string, where an escape means the same character.
std::string escape_line_separators(std::string json) {
    static constexpr std::pair<std::string_view, std::string_view> kEscapes[] = {
        {"\xC2\x85", "\\u0085"}, {"\xE2\x80\xA8", "\\u2028"}, {"\xE2\x80\xA9", "\\u2029"}};
    for (const auto& [raw, escaped] : kEscapes) {
        for (size_t at = json.find(raw); at != std::string::npos; at = json.find(raw, at + escaped.size()))
            json.replace(at, raw.size(), escaped);
    }
    return json;
}

}  // namespace

std::string sse_json(const nlohmann::json& value) { return sse_data(escape_line_separators(dump_json(value))); }

std::string sse_error(const ApiError& error) { return sse_json(error.to_json()); }

http::HttpResponse sse_response(http::ChunkProducer producer, http::StreamFinished on_finished) {
    http::HttpResponse response =
        http::HttpResponse::streaming("text/event-stream", std::move(producer), std::move(on_finished));
    response.headers.emplace("Cache-Control", "no-cache");
    response.headers.emplace("X-Accel-Buffering", "no");  // nginx: do not buffer the stream
    return response;
}

}  // namespace tempered::api
