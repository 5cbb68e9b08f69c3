// What the chat and completions response builders share: the engine's finish reason in OpenAI's terms.
#pragma once

#include "api/responses.h"
#include "engine/generation.h"

namespace tempered {

inline api::FinishReason to_api_finish_reason(FinishReason reason) {
    return reason == FinishReason::Length ? api::FinishReason::Length : api::FinishReason::Stop;
}

}  // namespace tempered
