#include "upstream/sse_reader.h"

namespace tempered::upstream {

std::vector<std::string> SseReader::feed(std::string_view bytes) {
    std::vector<std::string> payloads;
    for (const char c : bytes) {
        if (c != '\n') {
            line_ += c;
            continue;
        }
        if (!line_.empty() && line_.back() == '\r') line_.pop_back();
        constexpr std::string_view kData = "data:";
        if (std::string_view(line_).starts_with(kData)) {
            std::string_view payload = std::string_view(line_).substr(kData.size());
            if (payload.starts_with(' ')) payload.remove_prefix(1);
            payloads.emplace_back(payload);
        }
        line_.clear();
    }
    return payloads;
}

}  // namespace tempered::upstream
