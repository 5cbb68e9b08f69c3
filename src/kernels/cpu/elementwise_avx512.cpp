// AVX-512 versions of ops.h's element-wise kernels, equal to the scalar ones bit for bit.
#include <immintrin.h>

#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC 12's AVX-512 headers; see matmul_q8_avx512.cpp
#if !defined(__clang__)                           // a GCC warning; clang has no such group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "kernels/cpu/elementwise_simd.h"
#include "kernels/cpu/exp_avx.h"
#include "kernels/cpu/ops.h"

namespace tempered {

void swiglu_avx512(const float* gate, const float* up, float* out, int64_t n) {
    const __m512 one = _mm512_set1_ps(1.0f), zero = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 g = _mm512_loadu_ps(gate + i);
        const __m512 silu = _mm512_div_ps(g, _mm512_add_ps(one, canonical_exp_avx512(_mm512_sub_ps(zero, g))));
        _mm512_storeu_ps(out + i, _mm512_mul_ps(silu, _mm512_loadu_ps(up + i)));
    }
    swiglu_scalar(gate + i, up + i, out + i, n - i);
}

// The operations of swiglu_clamped_scalar, sixteen lanes at a time (see swiglu_clamped_avx2).
void swiglu_clamped_avx512(const float* gate, const float* up, float* out, int64_t n, float alpha, float limit) {
    const __m512 one = _mm512_set1_ps(1.0f), high = _mm512_set1_ps(limit), low = _mm512_set1_ps(-limit);
    const __m512 minus_alpha = _mm512_set1_ps(-alpha);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 x = _mm512_min_ps(high, _mm512_loadu_ps(gate + i));
        const __m512 y = _mm512_min_ps(high, _mm512_max_ps(low, _mm512_loadu_ps(up + i)));
        const __m512 silu = _mm512_div_ps(x, _mm512_add_ps(one, canonical_exp_avx512(_mm512_mul_ps(minus_alpha, x))));
        _mm512_storeu_ps(out + i, _mm512_mul_ps(silu, _mm512_add_ps(y, one)));
    }
    swiglu_clamped_scalar(gate + i, up + i, out + i, n - i, alpha, limit);
}

// The operations of geglu_tanh_scalar, sixteen lanes at a time.
void geglu_tanh_avx512(const float* gate, const float* up, float* out, int64_t n) {
    const __m512 one = _mm512_set1_ps(1.0f), cubic = _mm512_set1_ps(kGeluCubic);
    const __m512 exp_scale = _mm512_set1_ps(kGeluMinusTwoSqrtTwoOverPi);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 x = _mm512_loadu_ps(gate + i);
        const __m512 inner = _mm512_fmadd_ps(_mm512_mul_ps(cubic, _mm512_mul_ps(x, x)), x, x);
        const __m512 exp_term = canonical_exp_avx512(_mm512_mul_ps(exp_scale, inner));
        const __m512 gelu = _mm512_div_ps(x, _mm512_add_ps(one, exp_term));
        _mm512_storeu_ps(out + i, _mm512_mul_ps(gelu, _mm512_loadu_ps(up + i)));
    }
    geglu_tanh_scalar(gate + i, up + i, out + i, n - i);
}

void exp_of_scaled_difference_avx512(const float* x, float subtract, float multiply, float* out, int64_t n) {
    const __m512 offset = _mm512_set1_ps(subtract), scale = _mm512_set1_ps(multiply);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(out + i,
                         canonical_exp_avx512(_mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), offset), scale)));
    exp_of_scaled_difference_scalar(x + i, subtract, multiply, out + i, n - i);
}

}  // namespace tempered
