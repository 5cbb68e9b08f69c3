// One benchmark request to an OpenAI-compatible server, from its JSON body to what the client saw of
// it: the body it sends, the reading of its response (whole, or streamed as Server-Sent Events), and
// the record of its timings, usage and failure.
//
// Every request sends `max_tokens` and `ignore_eos: true` so that each one generates exactly
// max_tokens tokens whatever the model would rather say (vLLM, SGLang, llama.cpp's server and
// tempered accept ignore_eos; OpenAI itself would reject it). No sampling values are sent: the
// server's defaults apply, as they would for a client that does not care. A streamed request also
// asks for the final usage chunk (`stream_options.include_usage`), which carries the token counts.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "loadgen/server.h"

namespace tempered::loadgen {

// ---- the body ----------------------------------------------------------------------------------

enum class Endpoint {
    Completions,  // POST /v1/completions with "prompt"
    Chat,         // POST /v1/chat/completions with one user message
};

struct RequestSettings {
    Endpoint endpoint = Endpoint::Completions;
    std::string model;
    int64_t max_tokens = 128;
    bool stream = false;
    // Sent only when set: otherwise each server applies its own defaults, which is what clients see.
    std::optional<double> temperature;
};

std::string_view endpoint_route(Endpoint endpoint);  // "/v1/completions" or "/v1/chat/completions"
std::string_view endpoint_name(Endpoint endpoint);   // "completions" or "chat"

nlohmann::json generation_body(const RequestSettings& settings, const std::string& prompt);

// ---- the response ------------------------------------------------------------------------------

// What a benchmark needs from a response: whether it carries generated text, the token counts of its
// `usage`, and the message of an error. The same reader serves streamed chunks (choices[].text,
// choices[].delta.content) and whole responses (choices[].message.content).
struct PayloadContent {
    // Bytes of generated text over all choices. Chat deltas count `content` and the reasoning fields
    // servers stream before it (`reasoning_content`, `reasoning`): a reasoning model's first token is
    // a token all the same. A chunk with only a role, a finish_reason or usage carries none.
    size_t text_bytes = 0;
    std::optional<int64_t> prompt_tokens;      // usage.prompt_tokens
    std::optional<int64_t> completion_tokens;  // usage.completion_tokens
    std::optional<std::string> error;          // the message of an error payload
};

PayloadContent read_payload(const nlohmann::json& payload, Endpoint endpoint);

// Incremental Server-Sent Events parser for the client side of an OpenAI stream. Bytes arrive in
// whatever pieces the socket hands over: an event may be split across reads, and one read may carry
// several events, so the parser keeps the unfinished tail between calls.
//
// What it keeps of the SSE format (the WHATWG event-stream rules, reduced to what OpenAI-compatible
// servers send): lines end in "\n" or "\r\n"; "data:" lines (one optional space after the colon)
// accumulate, joined by "\n", into the event that a blank line ends; comment lines (":", used as
// keep-alives) and other fields (event:, id:, retry:) are skipped. A lone "\r" as a line end is not
// supported.
class SseParser {
public:
    // Appends the data payload of every event that `bytes` completes to `events`, in order.
    void feed(std::string_view bytes, std::vector<std::string>& events);

    // True when bytes of an unfinished event are pending (a stream that ends here was cut short).
    bool has_partial_event() const { return !line_.empty() || has_data_; }

private:
    void take_line(std::string_view line, std::vector<std::string>& events);

    std::string line_;  // the current line, up to its end-of-line
    std::string data_;  // the current event's data lines, joined
    bool has_data_ = false;
};

// The payload that ends an OpenAI stream: `data: [DONE]`.
inline constexpr std::string_view kDonePayload = "[DONE]";

// ---- the record --------------------------------------------------------------------------------

using Clock = std::chrono::steady_clock;

// What one request did, as the client saw it. Times are seconds since the request was sent.
struct RequestRecord {
    Clock::time_point start;
    Clock::time_point end;
    bool ok = false;
    std::string error;  // when !ok: "HTTP 400: ...", "timed out after 600 s", a transport failure

    // Streamed requests only: when each chunk that carried generated text arrived. The first is the
    // time to first token; the gaps between them are the inter-token latencies. One chunk may carry
    // several tokens (a server that batches its writes, or a detokenizer that holds back half a
    // character), so a gap is a gap between chunks, not always between tokens.
    std::vector<double> content_times_s;

    std::optional<int64_t> prompt_tokens;      // from the server's usage
    std::optional<int64_t> completion_tokens;  // from the server's usage

    double e2e_s() const { return std::chrono::duration<double>(end - start).count(); }
    std::optional<double> ttft_s() const {
        if (content_times_s.empty()) return std::nullopt;
        return content_times_s.front();
    }
    // usage.completion_tokens; without usage, the number of content chunks (a lower bound).
    int64_t output_tokens() const { return completion_tokens.value_or(static_cast<int64_t>(content_times_s.size())); }
};

// ---- sending -----------------------------------------------------------------------------------

// Sends one generation request and records its timings: the arrival of each streamed chunk that
// carries text, the end, the usage, or why it failed. A failure of any kind (transport, HTTP status,
// an error event in the stream, a stream cut short, the timeout) becomes a failed record, never an
// exception, so that one bad request cannot stop a benchmark.
//
// `timeout` bounds the whole request: it is checked whenever bytes arrive, and the session's read
// timeout (the same value) ends a wait in which nothing arrives. `live_text_chunks`, when given, is
// incremented as each text chunk arrives (for a progress display that moves during long requests).
RequestRecord run_request(HttpSession& session, const RequestSettings& settings, const std::string& prompt,
                          std::chrono::duration<double> timeout, std::atomic<int64_t>* live_text_chunks = nullptr);

// usage.prompt_tokens of one non-streamed request for `text` with max_tokens 1: what the server adds
// around a chat message (the chat template) is this minus count_tokens(text).
Result<int64_t> served_prompt_tokens(HttpSession& session, const RequestSettings& settings, const std::string& text);

}  // namespace tempered::loadgen
