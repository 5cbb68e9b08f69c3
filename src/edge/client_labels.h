// Client labels: what the request log and the per-client metrics call the sender of a request, when it
// is named by a header any client can set (--client-label-header). The set is bounded: the first
// `capacity` distinct values keep their own label and every later one counts as "other", so a client
// that sends a fresh value each time cannot grow /metrics without bound.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>

namespace tempered {

class ClientLabels {
public:
    static constexpr size_t kMaxLabelBytes = 64;
    static constexpr std::string_view kOther = "other";
    // A request without the header: its own label, outside the bounded set (so at most capacity + 2).
    static constexpr std::string_view kUnknown = "unknown";

    explicit ClientLabels(size_t capacity) : capacity_(capacity) {}

    // The label for a header value (sanitized first). Thread-safe; the same value always gets the same
    // label, and a value first seen once the set is full is "other" from then on.
    std::string label_for(std::string_view header_value);

    // Printable ASCII only (anything else, quotes and backslashes too, becomes '_'), trimmed, at most
    // kMaxLabelBytes; "" becomes kUnknown. Safe in a Prometheus label and a log line as is.
    static std::string sanitize(std::string_view header_value);

private:
    size_t capacity_;
    std::mutex mutex_;
    std::unordered_set<std::string> known_;
};

}  // namespace tempered
