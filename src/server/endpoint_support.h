// What the chat and completions response builders share: the engine's finish reason in OpenAI's terms.
#pragma once

#include "api/responses.h"
#include "engine/generation.h"

namespace tempered {

inline api::FinishReason to_api_finish_reason(FinishReason reason) {
    switch (reason) {
        case FinishReason::Stop: return api::FinishReason::Stop;
        case FinishReason::Length: return api::FinishReason::Length;
        case FinishReason::Repetition: return api::FinishReason::Repetition;
    }
    return api::FinishReason::Stop;
}

}  // namespace tempered
