#include "sampling/logprobs.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tempered {

TokenLogprob token_logprob(std::span<const float> logits, int32_t token, int top_count) {
    float max_logit = -INFINITY;
    for (float logit : logits) max_logit = std::max(max_logit, logit);
    double sum = 0.0;
    for (float logit : logits) sum += std::exp(static_cast<double>(logit - max_logit));
    const float log_normaliser = max_logit + static_cast<float>(std::log(sum));

    TokenLogprob out;
    out.token = token;
    out.logprob = logits[static_cast<size_t>(token)] - log_normaliser;
    if (top_count > 0) {
        std::vector<int32_t> ids(logits.size());
        std::iota(ids.begin(), ids.end(), 0);
        const auto count = std::min<size_t>(static_cast<size_t>(top_count), ids.size());
        std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(count), ids.end(),
                          [&](int32_t a, int32_t b) {
                              return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)] ||
                                     (logits[static_cast<size_t>(a)] == logits[static_cast<size_t>(b)] && a < b);
                          });
        for (size_t i = 0; i < count; ++i)
            out.top.emplace_back(ids[i], logits[static_cast<size_t>(ids[i])] - log_normaliser);
    }
    return out;
}

}  // namespace tempered
