#include "cli/perplexity.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kv/kv_block_pool.h"
#include "models/batch.h"
#include "models/model_config.h"

namespace tempered {
namespace {

constexpr int64_t kPrefillChunk = 128;

// -log softmax(row)[target], in double.
double negative_log_likelihood(const float* row, int64_t vocab, int32_t target) {
    const float max_logit = *std::max_element(row, row + vocab);
    double sum = 0.0;
    for (int64_t v = 0; v < vocab; ++v) sum += std::exp(static_cast<double>(row[v] - max_logit));
    return std::log(sum) - static_cast<double>(row[target] - max_logit);
}

}  // namespace

Result<PerplexityReport> measure_perplexity(LoadedModel& bundle, DType kv_type, const std::string& text,
                                            int64_t window) {
    const std::vector<int32_t> tokens = bundle.tokenizer->encode(text, /*add_special_tokens=*/false, false);
    Model& model = *bundle.model;
    const int64_t vocab = model.config().vocab_size;
    if (window < 2 || window > model.config().context_length)
        return Error{"--perplexity-window must be in [2, the context length]"};
    PerplexityReport report;
    report.windows = static_cast<int64_t>(tokens.size()) / window;
    if (report.windows == 0) return Error{"the text has fewer tokens than one --perplexity-window"};
    auto cache = KvBlockPool::for_positions(kv_cache_shape(model.config(), kv_type), window);
    if (!cache) return cache.error();
    std::vector<float> logits(static_cast<size_t>(kPrefillChunk * vocab));  // (chunk tokens, vocab)
    double total_nll = 0.0;
    for (int64_t w = 0; w < report.windows; ++w) {
        const int32_t* text_window = &tokens[static_cast<size_t>(w * window)];
        (*cache)->release(0);
        if (!(*cache)->ensure_capacity(0, window)) return Error{"the KV cache cannot hold one window"};
        for (int64_t begin = 0; begin < window; begin += kPrefillChunk) {
            Batch batch;
            for (int64_t i = begin; i < std::min(window, begin + kPrefillChunk); ++i)
                batch.add(text_window[i], static_cast<int32_t>(i), 0, true);
            if (auto status = model.forward(batch, **cache, logits.data()); !status) return status.error();
            for (int64_t i = 0; i < batch.size() && begin + i + 1 < window; ++i) {
                total_nll +=
                    negative_log_likelihood(&logits[static_cast<size_t>(i * vocab)], vocab, text_window[begin + i + 1]);
                ++report.tokens_scored;
            }
        }
    }
    report.mean_nll = total_nll / static_cast<double>(report.tokens_scored);
    report.perplexity = std::exp(report.mean_nll);
    return report;
}

}  // namespace tempered
