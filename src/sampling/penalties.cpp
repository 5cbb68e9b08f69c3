#include "sampling/penalties.h"

#include <unordered_set>

namespace tempered {

void apply_penalties(std::span<float> logits, const PenaltyParams& params, std::span<const int32_t> prompt,
                     std::span<const int32_t> output) {
    if (!params.active()) return;
    const auto vocab = static_cast<int64_t>(logits.size());
    auto in_vocab = [vocab](int32_t token) { return token >= 0 && token < vocab; };
    if (params.repetition != 1.0f) {
        std::unordered_set<int32_t> seen;
        for (int32_t token : prompt) seen.insert(token);
        for (int32_t token : output) seen.insert(token);
        for (int32_t token : seen) {
            if (!in_vocab(token)) continue;
            float& logit = logits[static_cast<size_t>(token)];
            logit = logit > 0 ? logit / params.repetition : logit * params.repetition;
        }
    }
    if (params.presence != 0.0f || params.frequency != 0.0f) {
        std::unordered_map<int32_t, int32_t> counts;
        for (int32_t token : output) ++counts[token];
        for (const auto& [token, count] : counts) {
            if (!in_vocab(token)) continue;
            logits[static_cast<size_t>(token)] -= params.presence + params.frequency * static_cast<float>(count);
        }
    }
}

}  // namespace tempered
