// Server-sent events from the upstream, as bytes arrive in any cut: each complete `data:` line's payload,
// in order. Comments (":"), other fields and blank separators are skipped; a line is complete at "\n"
// (a "\r" before it is dropped).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tempered::upstream {

class SseReader {
public:
    // The payloads of the data lines that `bytes` completed.
    std::vector<std::string> feed(std::string_view bytes);
    // Bytes of a line not finished yet (a stream that ends with some is cut off).
    bool holds_partial_line() const { return !line_.empty(); }

private:
    std::string line_;
};

}  // namespace tempered::upstream
