#include "settings/reasoning_settings.h"

#include <charconv>

namespace tempered {

int64_t ReasoningEffortBudgets::budget_for(api::ReasoningEffort effort) const {
    switch (effort) {
        case api::ReasoningEffort::Low: return low;
        case api::ReasoningEffort::Medium: return medium;
        case api::ReasoningEffort::High: return high;
    }
    return medium;
}

void ReasoningEffortBudgets::set(api::ReasoningEffort effort, int64_t tokens) {
    switch (effort) {
        case api::ReasoningEffort::Low: low = tokens; return;
        case api::ReasoningEffort::Medium: medium = tokens; return;
        case api::ReasoningEffort::High: high = tokens; return;
    }
}

Result<ReasoningEffortBudgets> parse_effort_budgets(std::string_view text) {
    ReasoningEffortBudgets budgets;
    while (!text.empty()) {
        const size_t comma = text.find(',');
        const std::string_view part = text.substr(0, comma);
        text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
        const size_t equals = part.find('=');
        const auto effort = api::reasoning_effort_from_name(part.substr(0, equals));
        int64_t tokens = -1;
        const std::string_view number = equals == std::string_view::npos ? "" : part.substr(equals + 1);
        const auto parsed = std::from_chars(number.data(), number.data() + number.size(), tokens);
        if (!effort || number.empty() || parsed.ec != std::errc{} || parsed.ptr != number.data() + number.size() ||
            tokens < 0)
            return Error{"--reasoning-effort-budgets: '" + std::string(part) + "' is not low|medium|high=<tokens>"};
        budgets.set(*effort, tokens);
    }
    return budgets;
}

}  // namespace tempered
