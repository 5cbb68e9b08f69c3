// Server-sent events as OpenAI streams them: each event is one `data: <json>` line and a blank line;
// the stream ends with `data: [DONE]`. An error after the stream has started (the status line is
// already 200) is sent as `data: {"error": {...}}`, which the OpenAI SDKs raise as an APIError.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/errors.h"
#include "http/http_types.h"

namespace tempered::api {

// "data: <payload>\n\n"; a payload with newlines becomes several data lines (one event).
std::string sse_data(std::string_view payload);
// One event carrying a JSON value. Invalid UTF-8 (a token that is half a character) becomes U+FFFD
// rather than an exception; U+0085, U+2028 and U+2029 are written as \u escapes (clients that split lines as
// str.splitlines does would cut the event at them).
std::string sse_json(const nlohmann::json& value);
// The error event for a failure mid-stream.
std::string sse_error(const ApiError& error);

// A 200 text/event-stream response with the headers proxies need to pass events through unbuffered.
http::HttpResponse sse_response(http::ChunkProducer producer, http::StreamFinished on_finished = {});

// JSON text for responses: compact, invalid UTF-8 replaced.
std::string dump_json(const nlohmann::json& value);

}  // namespace tempered::api
