#include "formats/quoted_name.h"

#include <cstdio>

namespace tempered {

std::string quoted_name(std::string_view text) {
    constexpr size_t kMaxShown = 96;
    std::string out = "'";
    for (unsigned char c : text.substr(0, kMaxShown)) {
        if (c < 0x20 || c == 0x7f) {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
            out += escaped;
        } else {
            out += static_cast<char>(c);
        }
    }
    out += "'";
    if (text.size() > kMaxShown) out += " (" + std::to_string(text.size()) + " bytes, cut)";
    return out;
}

}  // namespace tempered
