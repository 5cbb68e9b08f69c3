// The model's raw log-probabilities (log-softmax of the logits, before penalties, bias, temperature
// or truncation), as OpenAI's logprobs report them.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace tempered {

struct TokenLogprob {
    int32_t token = 0;
    float logprob = 0.0f;
    std::vector<std::pair<int32_t, float>> top;  // the most likely tokens, most likely first
};

// log p(token) and the `top_count` most likely tokens (ties broken by lower id).
TokenLogprob token_logprob(std::span<const float> logits, int32_t token, int top_count);

}  // namespace tempered
