// A fixed exp for attention weights and the SwiGLU gate, the same bits on every instruction set
// (std::exp's result may differ between libm builds and is not vectorised).
//
// canonical_exp(x): 0 below -87 (so exp(-inf) = 0 exactly: masked logits never get weight), else
// clamp x to at most 88, n = round(x / ln 2), r = x - n ln 2 (in two parts), a
// degree-6 Taylor polynomial for exp(r) (|r| <= 0.35: relative error < 2e-7) times 2^n. The vector
// versions (exp_avx.h) perform exactly these operations lane by lane.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace tempered {

inline constexpr float kExpMin = -87.0f, kExpMax = 88.0f, kLog2e = 1.44269504f;
inline constexpr float kRoundMagic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
inline constexpr float kLn2High = 0.693145752f, kLn2Low = 1.42860677e-6f;
inline constexpr float kExpCoefficients[7] = {1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f, 1.0f, 1.0f};

inline float canonical_exp(float x) {
    if (x < kExpMin) return 0.0f;
    x = std::min(x, kExpMax);
    const float n = std::fma(x, kLog2e, kRoundMagic) - kRoundMagic;
    float r = std::fma(n, -kLn2High, x);
    r = std::fma(n, -kLn2Low, r);
    float p = kExpCoefficients[0];
    for (int i = 1; i < 7; ++i) p = std::fma(p, r, kExpCoefficients[i]);
    const auto scale_bits = static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23;
    return p * std::bit_cast<float>(scale_bits);
}

}  // namespace tempered
