// The one loop behind /v1/chat/completions and /v1/completions, streamed or whole: it polls the
// engine's streams, checks between events that the client is still there (and cancels the generation
// when it is not), counts aborts, measures the time to the first token, reports usage and writes the
// request-log line. What differs per endpoint, the shape of chunks and bodies, is a ResponseBuilder.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/errors.h"
#include "api/responses.h"
#include "api/sse.h"
#include "edge/request_log.h"
#include "engine/generation.h"
#include "http/http_types.h"
#include "server/serving_metrics.h"
#include "server/stream_set.h"

namespace tempered {

inline constexpr std::chrono::milliseconds kStreamPollInterval{50};

// Builds one endpoint's response from the engine's deltas. Per-choice state lives here, so a parser
// that turns deltas into something else (reasoning, tool calls) plugs in as a builder or inside one. The
// defaults are OpenAI's chat and completions streams: data-only events, `[DONE]` at the end, errors in
// OpenAI's envelope; the Responses and Messages builders send named events and their own envelopes.
class ResponseBuilder {
public:
    virtual ~ResponseBuilder() = default;
    // Streams: the chunks sent before any token (chat: each choice's role; completions: the echo).
    virtual std::vector<nlohmann::json> opening_chunks() = 0;
    // Folds one delta into its choice. A streaming builder returns the chunks to send (none: there is
    // nothing new to say); a whole-response builder returns none and keeps the text.
    virtual std::vector<nlohmann::json> on_delta(const ChoiceDelta& delta) = 0;
    // Streams: the chunks after the last delta (chat and completions: the usage chunk, when asked for).
    virtual std::vector<nlohmann::json> closing_chunks(const api::Usage& usage, bool include_usage) = 0;
    // Whole responses: the body.
    virtual nlohmann::json final_body(const api::Usage& usage) = 0;

    // One chunk as the stream sends it.
    virtual std::string frame(const nlohmann::json& chunk) const { return api::sse_json(chunk); }
    // Whether the stream ends with `data: [DONE]`.
    virtual bool ends_with_done() const { return true; }
    // A failure after the stream started, and one before it (the status line not yet sent).
    virtual std::string error_event(const api::ApiError& error) const { return api::sse_error(error); }
    virtual http::HttpResponse error_response(const api::ApiError& error) const { return api::to_http_response(error); }
    // Where the resolved sampling report goes: the first chunk of a stream, or the whole body.
    virtual void show_sampling(nlohmann::json& chunk_or_body, const nlohmann::json& sampling) const {
        chunk_or_body["sampling"] = sampling;
    }
};

// One accepted generation request, ready to answer.
struct GenerationJob {
    std::shared_ptr<StreamSet> streams;
    std::unique_ptr<ResponseBuilder> builder;
    bool stream = false;
    bool include_usage = false;   // streams: a usage chunk before [DONE]
    bool report_sampling = true;  // the resolved sampling in the first chunk, or in the body
    nlohmann::json sampling;      // the resolved sampling values with their sources
    // The request log: which endpoint, under which id, since when.
    std::string endpoint;
    std::string request_id;
    // Who sent it (edge/access_control.h); nullopt when the server names no clients, and then the
    // log line has no "client" field.
    std::optional<std::string> client;
    std::chrono::steady_clock::time_point received;
    // --request-timeout: past the deadline the request is cancelled in the engine and answered with a
    // 408 (a stream: an error event, then [DONE]). No timeout: the deadline never comes.
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
    double timeout_seconds = 0;  // for the error message
    // --log-level debug: given the prompt tokens the prefix cache served, where the prompt left the cache.
    std::function<std::string(int64_t cached_tokens)> prefix_note;
    // The outcome logged until choice 0 finishes ("length" for completions that only score a prompt).
    std::string outcome = "stop";
};

// Answers `request` with the job's generation: an SSE stream or one JSON body.
http::HttpResponse run_generation(GenerationJob job, const http::HttpRequest& request, ServingMetrics& metrics,
                                  RequestLog& log);

}  // namespace tempered
