// canonical_exp (attention_kernel.h) on 8 and 16 lanes. Include only from *_avx2.cpp / *_avx512.cpp
// files, which are compiled for those instruction sets.
#pragma once

#include <immintrin.h>

#include "kernels/cpu/fast_exp.h"

namespace tempered {

inline __m256 canonical_exp_avx2(__m256 x) {
    const __m256 below = _mm256_cmp_ps(x, _mm256_set1_ps(kExpMin), _CMP_LT_OQ);
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(kExpMin)), _mm256_set1_ps(kExpMax));
    const __m256 magic = _mm256_set1_ps(kRoundMagic);
    const __m256 n = _mm256_sub_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(kLog2e), magic), magic);
    __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-kLn2High), x);
    r = _mm256_fmadd_ps(n, _mm256_set1_ps(-kLn2Low), r);
    __m256 p = _mm256_set1_ps(kExpCoefficients[0]);
    for (int i = 1; i < 7; ++i) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpCoefficients[i]));
    const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_andnot_ps(below, _mm256_mul_ps(p, _mm256_castsi256_ps(bits)));
}

#ifdef __AVX512F__
inline __m512 canonical_exp_avx512(__m512 x) {
    const __mmask16 below = _mm512_cmp_ps_mask(x, _mm512_set1_ps(kExpMin), _CMP_LT_OQ);
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(kExpMin)), _mm512_set1_ps(kExpMax));
    const __m512 magic = _mm512_set1_ps(kRoundMagic);
    const __m512 n = _mm512_sub_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(kLog2e), magic), magic);
    __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(-kLn2High), x);
    r = _mm512_fmadd_ps(n, _mm512_set1_ps(-kLn2Low), r);
    __m512 p = _mm512_set1_ps(kExpCoefficients[0]);
    for (int i = 1; i < 7; ++i) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpCoefficients[i]));
    const __m512i bits = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_maskz_mov_ps(static_cast<__mmask16>(~below), _mm512_mul_ps(p, _mm512_castsi512_ps(bits)));
}
#endif

}  // namespace tempered
