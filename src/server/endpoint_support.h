// What the response builders share: the engine's finish reason in OpenAI's terms, a choice's reasoning report as
// its reasoning_budget object.
#pragma once

#include "api/responses.h"
#include "engine/generation.h"
#include "engine/reasoning_phase.h"

namespace tempered {

inline api::FinishReason to_api_finish_reason(FinishReason reason) {
    switch (reason) {
        case FinishReason::Stop: return api::FinishReason::Stop;
        case FinishReason::Length: return api::FinishReason::Length;
        case FinishReason::Repetition: return api::FinishReason::Repetition;
    }
    return api::FinishReason::Stop;
}

// The choice's reasoning_budget; nullopt when it never reasoned.
inline std::optional<api::ReasoningBudget> reasoning_budget_of(const ReasoningReport& report) {
    if (!report.reasoned) return std::nullopt;
    api::ReasoningBudget budget{report.tokens, report.budget, std::nullopt};
    if (report.forced_end) budget.forced_end = forced_end_name(*report.forced_end);
    return budget;
}

}  // namespace tempered
