// What the chat and completions handlers share: how often they look up from a stream to check on the
// client, and the engine's finish reason in OpenAI's terms.
#pragma once

#include <chrono>

#include "api/responses.h"
#include "engine/generation.h"

namespace tempered {

inline constexpr std::chrono::milliseconds kStreamPollInterval{50};

inline api::FinishReason to_api_finish_reason(FinishReason reason) {
    return reason == FinishReason::Length ? api::FinishReason::Length : api::FinishReason::Stop;
}

}  // namespace tempered
