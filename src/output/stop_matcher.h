// Holds back generated text while it could still be the start of a stop string, so that a stop
// string is never emitted, not even partly, however the tokens split it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tempered {

class StopMatcher {
public:
    explicit StopMatcher(std::vector<std::string> stop_strings);

    struct Output {
        std::string text;      // safe to emit now
        bool stopped = false;  // a stop string was found; `text` ends right before it
        std::string stop;      // the stop string found ("" none)
    };
    // Adds generated text; returns what may be emitted.
    Output push(std::string_view text);
    // The end of generation without a stop string: whatever was held back.
    std::string flush();

private:
    std::vector<std::string> stop_strings_;
    std::string pending_;
};

}  // namespace tempered
