// The operator's reasoning flags: which parser reads the model's output (--reasoning-parser: auto from
// the chat template, deepseek_r1, or none) and the budgets a chat request runs under. What they become
// for a model and for one request is server/chat_reasoning.h.
//
// A request's budget: its thinking_token_budget (vLLM's name) if given, else the operator's budget for
// its reasoning_effort (--reasoning-effort-budgets; defaults low=256, medium=1024, high=4096), else
// --reasoning-budget, else unlimited. A model with no reasoning parser ignores both fields, as vLLM does.
// Chat only: completions have no template, so their output is left as the model wrote it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "api/chat_request.h"
#include "core/result.h"

namespace tempered {

struct ReasoningEffortBudgets {
    int64_t low = 256;
    int64_t medium = 1024;
    int64_t high = 4096;

    int64_t budget_for(api::ReasoningEffort effort) const;
    void set(api::ReasoningEffort effort, int64_t tokens);
};

// "low=256,medium=1024,high=4096" (any subset; the rest keep their defaults); an error names the part.
Result<ReasoningEffortBudgets> parse_effort_budgets(std::string_view text);

// The operator's flags.
struct ReasoningSettings {
    std::string parser = "auto";    // auto | deepseek_r1 | none
    std::optional<int64_t> budget;  // --reasoning-budget; nullopt: unlimited
    ReasoningEffortBudgets effort_budgets;
};

}  // namespace tempered
