#include "server/reasoning_settings.h"

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

ReasoningSetup choose_reasoning(const ReasoningSettings& settings, std::string_view chat_template,
                                const Tokenizer& tokenizer) {
    ReasoningSetup setup;
    const std::string flag = " (--reasoning-parser " + settings.parser + ")";
    if (settings.parser == "none") {
        setup.why = "reasoning: not split, answers are content" + flag;
        return setup;
    }
    const auto parser = settings.parser == "auto" ? reasoning::detect_parser(chat_template)
                                                  : reasoning::parser_from_name(settings.parser);
    const auto markers =
        reasoning::ThinkTokens::find([&](std::string_view text) { return tokenizer.find_token(text); });
    if (!parser) {
        setup.why = "reasoning: the chat template shows none, answers are content" + flag;
        return setup;
    }
    if (!markers) {
        setup.why = "reasoning: <think> and </think> are not single tokens here, answers are content" + flag;
        return setup;
    }
    setup.parser = parser;
    setup.markers = *markers;
    setup.forced_end = tokenizer.encode("\n</think>\n\n", /*add_special_tokens=*/false, /*parse_special=*/true);
    setup.why = "reasoning: split with the " + std::string(reasoning::parser_name(*parser)) + " parser" + flag;
    return setup;
}

ReasoningOptions reasoning_options(const ReasoningSetup& setup, const ReasoningSettings& settings,
                                   const api::ChatRequest& request, const std::vector<int32_t>& prompt) {
    ReasoningOptions options;
    if (!setup.parser) return options;
    options.markers = setup.markers;
    options.prompt_opens_reasoning = reasoning::prompt_opens_reasoning(setup.markers, prompt);
    options.forced_end = setup.forced_end;
    if (request.thinking_token_budget)
        options.budget = *request.thinking_token_budget;
    else if (request.reasoning_effort)
        options.budget = settings.effort_budgets.budget_for(*request.reasoning_effort);
    else
        options.budget = settings.budget;
    return options;
}

}  // namespace tempered
