#include "speculative/rejection_sampling.h"

#include <algorithm>

namespace tempered {
namespace {

// The token at which the cumulative sum of max(0, p - q) passes `uniform` times its total; the last token
// with residual mass when rounding leaves the sum short.
int32_t draw_residual(std::span<const float> target, std::span<const float> draft, float uniform) {
    double total = 0.0;
    for (size_t i = 0; i < target.size(); ++i) total += std::max(0.0f, target[i] - draft[i]);
    if (total <= 0.0) {  // p == q: nothing is ever rejected, but rounding may land here; draw from p
        double sum = 0.0;
        for (size_t i = 0; i < target.size(); ++i) {
            sum += target[i];
            if (sum > uniform) return static_cast<int32_t>(i);
        }
        return static_cast<int32_t>(target.size()) - 1;
    }
    const double goal = static_cast<double>(uniform) * total;
    double sum = 0.0;
    int32_t last = -1;
    for (size_t i = 0; i < target.size(); ++i) {
        const float residual = std::max(0.0f, target[i] - draft[i]);
        if (residual <= 0.0f) continue;
        last = static_cast<int32_t>(i);
        sum += residual;
        if (sum > goal) return last;
    }
    return last;
}

}  // namespace

DraftVerdict verify_draft(std::span<const float> target, std::span<const float> draft, int32_t draft_token,
                          float accept_uniform, float resample_uniform) {
    const auto d = static_cast<size_t>(draft_token);
    const float p = target[d], q = draft[d];
    // Keep with probability min(1, p / q): uniform * q < p avoids dividing (q > 0: d was drawn from q).
    if (accept_uniform * q < p) return {true, draft_token};
    return {false, draw_residual(target, draft, resample_uniform)};
}

}  // namespace tempered
