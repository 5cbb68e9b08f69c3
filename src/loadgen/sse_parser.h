// Incremental Server-Sent Events parser for the client side of an OpenAI stream. Bytes arrive in
// whatever pieces the socket hands over: an event may be split across reads, and one read may carry
// several events, so the parser keeps the unfinished tail between calls.
//
// What it keeps of the SSE format (the WHATWG event-stream rules, reduced to what OpenAI-compatible
// servers send): lines end in "\n" or "\r\n"; "data:" lines (one optional space after the colon)
// accumulate, joined by "\n", into the event that a blank line ends; comment lines (":", used as
// keep-alives) and other fields (event:, id:, retry:) are skipped. A lone "\r" as a line end is not
// supported.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tempered::loadgen {

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

}  // namespace tempered::loadgen
