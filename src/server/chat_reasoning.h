// Reasoning in chat answers, as the server sets it up from the operator's flags
// (settings/reasoning_settings.h): the parser chosen for the served model, the budget one request runs
// under, and the forced end the engine appends when that budget is spent.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/chat_request.h"
#include "engine/reasoning_phase.h"
#include "reasoning/reasoning_parser.h"
#include "settings/reasoning_settings.h"
#include "tokenizer/tokenizer.h"

namespace tempered {

// What the served model's output is read with. No parser: answers are content only.
struct ReasoningSetup {
    std::optional<reasoning::ReasoningParserKind> parser;
    reasoning::ThinkTokens markers;                   // DeepSeekR1
    std::optional<reasoning::HarmonyTokens> harmony;  // Harmony
    // "\n</think>\n\n", or harmony's "<|end|><|start|>assistant<|channel|>final<|message|>"; special tokens parsed
    std::vector<int32_t> forced_end;
    std::string why;  // one line for the start-up log
};

ReasoningSetup choose_reasoning(const ReasoningSettings& settings, std::string_view chat_template,
                                const Tokenizer& tokenizer);

// The engine's options for one chat request whose prompt is `prompt`.
ReasoningOptions reasoning_options(const ReasoningSetup& setup, const ReasoningSettings& settings,
                                   const api::ChatRequest& request, const std::vector<int32_t>& prompt);

}  // namespace tempered
