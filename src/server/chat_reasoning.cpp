#include "server/chat_reasoning.h"

namespace tempered {
namespace {

ReasoningSetup choose_harmony(const Tokenizer& tokenizer, const std::string& flag) {
    ReasoningSetup setup;
    setup.harmony = reasoning::HarmonyTokens::find([&](std::string_view text) { return tokenizer.find_token(text); });
    if (!setup.harmony) {
        setup.why = "reasoning: harmony's markers are not single tokens here, answers are content" + flag;
        return setup;
    }
    setup.parser = reasoning::ReasoningParserKind::Harmony;
    setup.forced_end = tokenizer.encode("<|end|><|start|>assistant<|channel|>final<|message|>",
                                        /*add_special_tokens=*/false, /*parse_special=*/true);
    setup.why = "reasoning: split with the harmony parser (analysis channel)" + flag;
    return setup;
}

}  // namespace

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
    if (parser == reasoning::ReasoningParserKind::Harmony) return choose_harmony(tokenizer, flag);
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
    if (setup.harmony) {
        options.harmony = setup.harmony;  // gpt-oss's template ends the prompt with a header, never in analysis
    } else {
        options.markers = setup.markers;
        options.prompt_opens_reasoning = reasoning::prompt_opens_reasoning(setup.markers, prompt);
    }
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
