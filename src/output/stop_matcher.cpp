#include "output/stop_matcher.h"

#include <algorithm>
#include <utility>

namespace tempered {

StopMatcher::StopMatcher(std::vector<std::string> stop_strings) : stop_strings_(std::move(stop_strings)) {
    std::erase_if(stop_strings_, [](const std::string& s) { return s.empty(); });
}

StopMatcher::Output StopMatcher::push(std::string_view text) {
    pending_.append(text);
    if (stop_strings_.empty()) return {std::exchange(pending_, {}), false, {}};
    // The earliest stop string wins.
    size_t earliest = std::string::npos;
    const std::string* found = nullptr;
    for (const auto& stop : stop_strings_) {
        const size_t at = pending_.find(stop);
        if (at < earliest) {
            earliest = at;
            found = &stop;
        }
    }
    if (found != nullptr) {
        Output out{pending_.substr(0, earliest), true, *found};
        pending_.clear();
        return out;
    }
    // Keep the longest suffix of pending_ that is a proper prefix of some stop string.
    size_t keep = 0;
    for (const auto& stop : stop_strings_) {
        const size_t longest = std::min(stop.size() - 1, pending_.size());
        for (size_t length = longest; length > keep; --length) {
            if (std::string_view(pending_).substr(pending_.size() - length) ==
                std::string_view(stop).substr(0, length)) {
                keep = length;
                break;
            }
        }
    }
    Output out{pending_.substr(0, pending_.size() - keep), false, {}};
    pending_.erase(0, pending_.size() - keep);
    return out;
}

std::string StopMatcher::flush() { return std::exchange(pending_, {}); }

}  // namespace tempered
