// Vector twins of ops.h's element-wise kernels; ops.cpp dispatches to them. Bit-identical to the
// scalar code (tests/unit/ops_test.cpp).
#pragma once

#include <cstdint>

namespace tempered {

void swiglu_avx2(const float* gate, const float* up, float* out, int64_t n);
void swiglu_avx512(const float* gate, const float* up, float* out, int64_t n);
void exp_of_scaled_difference_avx2(const float* x, float subtract, float multiply, float* out, int64_t n);
void exp_of_scaled_difference_avx512(const float* x, float subtract, float multiply, float* out, int64_t n);
// Round to nearest even, as float_to_half.
void float_to_half_avx2(const float* src, uint16_t* dst, int64_t n);

}  // namespace tempered
