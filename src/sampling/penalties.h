// Repetition penalties, applied to a copy of the logits before bias, temperature and truncation.
//   repetition_penalty (multiplicative, as in HF transformers and llama.cpp): every token seen in the
//     prompt or the output has its logit divided by the penalty if positive, multiplied if negative;
//   presence_penalty and frequency_penalty (additive, OpenAI): over the output only,
//     logit -= presence * [count > 0] + frequency * count.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>

namespace tempered {

struct PenaltyParams {
    float repetition = 1.0f;
    float presence = 0.0f;
    float frequency = 0.0f;

    bool active() const { return repetition != 1.0f || presence != 0.0f || frequency != 0.0f; }
};

void apply_penalties(std::span<float> logits, const PenaltyParams& params, std::span<const int32_t> prompt,
                     std::span<const int32_t> output);

}  // namespace tempered
