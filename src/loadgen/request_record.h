// What one benchmark request did, as the client saw it. Times are seconds since the request was sent.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tempered::loadgen {

using Clock = std::chrono::steady_clock;

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
    int64_t output_tokens() const {
        return completion_tokens.value_or(static_cast<int64_t>(content_times_s.size()));
    }
};

}  // namespace tempered::loadgen
