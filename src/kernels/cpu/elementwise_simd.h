// Vector twins of ops.h's element-wise kernels; ops.cpp dispatches to them. Bit-identical to the
// scalar code (tests/unit/ops_test.cpp).
#pragma once

#include <cstdint>

namespace tempered {

void swiglu_avx2(const float* gate, const float* up, float* out, int64_t n);
void swiglu_avx512(const float* gate, const float* up, float* out, int64_t n);
void swiglu_clamped_avx2(const float* gate, const float* up, float* out, int64_t n, float alpha, float limit);
void swiglu_clamped_avx512(const float* gate, const float* up, float* out, int64_t n, float alpha, float limit);
void geglu_tanh_avx2(const float* gate, const float* up, float* out, int64_t n);
void geglu_tanh_avx512(const float* gate, const float* up, float* out, int64_t n);

// geglu_tanh's constants: the cubic coefficient, and -2 sqrt(2 / pi) (0.5 (1 + tanh(u)) = 1 / (1 + exp(-2u))).
inline constexpr float kGeluCubic = 0.044715f, kGeluMinusTwoSqrtTwoOverPi = -1.5957691216057308f;
void exp_of_scaled_difference_avx2(const float* x, float subtract, float multiply, float* out, int64_t n);
void exp_of_scaled_difference_avx512(const float* x, float subtract, float multiply, float* out, int64_t n);
// Round to nearest even, as float_to_half.
void float_to_half_avx2(const float* src, uint16_t* dst, int64_t n);

}  // namespace tempered
