// What an FP8 KV cache costs in quality, as measured, for the start-up warning of --kv-cache-dtype fp8:
// the perplexity change against f16 KV over tests/fixtures/model/perplexity_text.txt, from
// bench/results/kv-fp8-quality-2026-12-02.md (bench/kv_cache_quality.py). Re-measure when the format or
// the scale changes.
#pragma once

#include <cstdio>
#include <string>

namespace tempered {

inline constexpr double kFp8PerplexityChangeSmolLM2Percent = 2.43;    // SmolLM2-135M-Instruct Q4_1: 17.89 -> 18.33
inline constexpr double kFp8PerplexityChangeQwenCoderPercent = 3.81;  // Qwen2.5-Coder-0.5B Q4_K_M: 3.220 -> 3.342

inline std::string fp8_kv_warning() {
    char text[512];
    std::snprintf(text, sizeof text,
                  "warning: --kv-cache-dtype fp8 stores keys and values as FP8 E4M3 (one scale per head vector): "
                  "about half the KV memory of f16, at a measured perplexity change of %+.2f%% (SmolLM2-135M) "
                  "and %+.2f%% (Qwen2.5-Coder-0.5B) against f16 KV "
                  "(bench/results/kv-fp8-quality-2026-12-02.md); f16 is the default",
                  kFp8PerplexityChangeSmolLM2Percent, kFp8PerplexityChangeQwenCoderPercent);
    return text;
}

}  // namespace tempered
