// AVX2 versions of ops.h's element-wise kernels, equal to the scalar ones bit for bit.
#include <immintrin.h>

#include "core/half.h"
#include "kernels/cpu/elementwise_simd.h"
#include "kernels/cpu/exp_avx.h"
#include "kernels/cpu/ops.h"

namespace tempered {

void swiglu_avx2(const float* gate, const float* up, float* out, int64_t n) {
    const __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 g = _mm256_loadu_ps(gate + i);
        const __m256 silu = _mm256_div_ps(g, _mm256_add_ps(one, canonical_exp_avx2(_mm256_sub_ps(zero, g))));
        _mm256_storeu_ps(out + i, _mm256_mul_ps(silu, _mm256_loadu_ps(up + i)));
    }
    swiglu_scalar(gate + i, up + i, out + i, n - i);
}

// The operations of swiglu_clamped_scalar, eight lanes at a time, min and max ordered as std::min and std::clamp.
void swiglu_clamped_avx2(const float* gate, const float* up, float* out, int64_t n, float alpha, float limit) {
    const __m256 one = _mm256_set1_ps(1.0f), high = _mm256_set1_ps(limit), low = _mm256_set1_ps(-limit);
    const __m256 minus_alpha = _mm256_set1_ps(-alpha);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 x = _mm256_min_ps(high, _mm256_loadu_ps(gate + i));
        const __m256 y = _mm256_min_ps(high, _mm256_max_ps(low, _mm256_loadu_ps(up + i)));
        const __m256 silu = _mm256_div_ps(x, _mm256_add_ps(one, canonical_exp_avx2(_mm256_mul_ps(minus_alpha, x))));
        _mm256_storeu_ps(out + i, _mm256_mul_ps(silu, _mm256_add_ps(y, one)));
    }
    swiglu_clamped_scalar(gate + i, up + i, out + i, n - i, alpha, limit);
}

// The operations of geglu_tanh_scalar, eight lanes at a time.
void geglu_tanh_avx2(const float* gate, const float* up, float* out, int64_t n) {
    const __m256 one = _mm256_set1_ps(1.0f), cubic = _mm256_set1_ps(kGeluCubic);
    const __m256 exp_scale = _mm256_set1_ps(kGeluMinusTwoSqrtTwoOverPi);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 x = _mm256_loadu_ps(gate + i);
        const __m256 inner = _mm256_fmadd_ps(_mm256_mul_ps(cubic, _mm256_mul_ps(x, x)), x, x);
        const __m256 exp_term = canonical_exp_avx2(_mm256_mul_ps(exp_scale, inner));
        const __m256 gelu = _mm256_div_ps(x, _mm256_add_ps(one, exp_term));
        _mm256_storeu_ps(out + i, _mm256_mul_ps(gelu, _mm256_loadu_ps(up + i)));
    }
    geglu_tanh_scalar(gate + i, up + i, out + i, n - i);
}

void exp_of_scaled_difference_avx2(const float* x, float subtract, float multiply, float* out, int64_t n) {
    const __m256 offset = _mm256_set1_ps(subtract), scale = _mm256_set1_ps(multiply);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i,
                         canonical_exp_avx2(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), offset), scale)));
    exp_of_scaled_difference_scalar(x + i, subtract, multiply, out + i, n - i);
}

void float_to_half_avx2(const float* src, uint16_t* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i halves = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), halves);
    }
    for (; i < n; ++i) dst[i] = float_to_half(src[i]);
}

}  // namespace tempered
