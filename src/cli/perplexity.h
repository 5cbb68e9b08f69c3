// tempered run --perplexity FILE: the model's perplexity over a text, with the KV cache type chosen
// (how bench/kv_cache_quality.py measures what an FP8 cache costs). The protocol is the llama.cpp
// oracle's (tests/unit/model_llama_oracle_test.cpp): the text tokenized without BOS, non-overlapping
// windows from position 0, every token after the first of a window scored, each window prefilled in
// chunks of 128 tokens.
#pragma once

#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "core/result.h"
#include "runtime/loaded_model.h"

namespace tempered {

struct PerplexityReport {
    int64_t windows = 0;
    int64_t tokens_scored = 0;
    double mean_nll = 0.0;  // nats per scored token
    double perplexity = 0.0;
};

Result<PerplexityReport> measure_perplexity(LoadedModel& bundle, DType kv_type, const std::string& text,
                                            int64_t window);

}  // namespace tempered
