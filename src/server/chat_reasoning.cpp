#include "server/chat_reasoning.h"

namespace tempered {

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
