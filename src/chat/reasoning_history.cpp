#include "chat/reasoning_history.h"

#include <cctype>

namespace tempered {

std::vector<std::string> reasoning_keys(std::string_view template_source) {
    std::vector<std::string> keys;
    for (const std::string name : {"reasoning_content", "thinking", "reasoning"}) {
        for (const std::string& spelled : {"." + name, "['" + name + "']", "[\"" + name + "\"]"}) {
            // `.name` must end there: `.reasoning` is not read where the template only has `.reasoning_content`.
            for (size_t at = template_source.find(spelled); at != std::string_view::npos;
                 at = template_source.find(spelled, at + 1)) {
                const size_t end = at + spelled.size();
                const char next = end < template_source.size() ? template_source[end] : ' ';
                if (spelled[0] != '.' || !(std::isalnum(static_cast<unsigned char>(next)) || next == '_')) {
                    keys.push_back(name);
                    break;
                }
            }
            if (!keys.empty() && keys.back() == name) break;
        }
    }
    return keys;
}

}  // namespace tempered
