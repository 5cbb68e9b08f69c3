// Sends one generation request and records its timings: the arrival of each streamed chunk that
// carries text, the end, the usage, or why it failed. A failure of any kind (transport, HTTP status,
// an error event in the stream, a stream cut short, the timeout) becomes a failed record, never an
// exception, so that one bad request cannot stop a benchmark.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "loadgen/http_session.h"
#include "loadgen/request_body.h"
#include "loadgen/request_record.h"

namespace tempered::loadgen {

// `timeout` bounds the whole request: it is checked whenever bytes arrive, and the session's read
// timeout (the same value) ends a wait in which nothing arrives. `live_text_chunks`, when given, is
// incremented as each text chunk arrives (for a progress display that moves during long requests).
RequestRecord run_request(HttpSession& session, const RequestSettings& settings, const std::string& prompt,
                          std::chrono::duration<double> timeout, std::atomic<int64_t>* live_text_chunks = nullptr);

}  // namespace tempered::loadgen
