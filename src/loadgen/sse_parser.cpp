#include "loadgen/sse_parser.h"

namespace tempered::loadgen {

void SseParser::feed(std::string_view bytes, std::vector<std::string>& events) {
    while (!bytes.empty()) {
        const size_t newline = bytes.find('\n');
        if (newline == std::string_view::npos) {
            line_.append(bytes);
            return;
        }
        line_.append(bytes.substr(0, newline));
        bytes.remove_prefix(newline + 1);
        std::string line = std::move(line_);
        line_.clear();
        if (!line.empty() && line.back() == '\r') line.pop_back();
        take_line(line, events);
    }
}

void SseParser::take_line(std::string_view line, std::vector<std::string>& events) {
    if (line.empty()) {  // a blank line dispatches the event, if it had data
        if (has_data_) events.push_back(std::move(data_));
        data_.clear();
        has_data_ = false;
        return;
    }
    if (line.front() == ':') return;  // a comment
    const size_t colon = line.find(':');
    const std::string_view field = line.substr(0, colon);
    if (field != "data") return;
    std::string_view value = colon == std::string_view::npos ? std::string_view{} : line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (has_data_) data_.push_back('\n');
    data_.append(value);
    has_data_ = true;
}

}  // namespace tempered::loadgen
