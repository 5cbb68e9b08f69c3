#include "api/sse.h"

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

std::string sse_json(const nlohmann::json& value) { return sse_data(dump_json(value)); }

std::string sse_error(const ApiError& error) { return sse_json(error.to_json()); }

http::HttpResponse sse_response(http::ChunkProducer producer, http::StreamFinished on_finished) {
    http::HttpResponse response =
        http::HttpResponse::streaming("text/event-stream", std::move(producer), std::move(on_finished));
    response.headers.emplace("Cache-Control", "no-cache");
    response.headers.emplace("X-Accel-Buffering", "no");  // nginx: do not buffer the stream
    return response;
}

}  // namespace tempered::api
