// fp8.h's conversions on 8 and 16 lanes, equal bit for bit to the scalar ones. Include only from
// *_avx2.cpp / *_avx512.cpp files, which are compiled for those instruction sets.
#pragma once

#include <immintrin.h>

#include "kernels/cpu/fp8.h"

namespace tempered {

// 8 codes (one per 32-bit lane, 0..255) as floats: normals by moving the exponent and mantissa bits
// into place and rebiasing, subnormals as mantissa * 2^-9 (exact), NaN codes as the signed float NaN.
inline __m256 e4m3_to_float_avx2(__m256i code) {
    const __m256i magnitude = _mm256_and_si256(code, _mm256_set1_epi32(0x7F));
    const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(code, _mm256_set1_epi32(0x80)), 24);
    const __m256 normal =
        _mm256_castsi256_ps(_mm256_add_epi32(_mm256_slli_epi32(magnitude, 20), _mm256_set1_epi32(120 << 23)));
    const __m256 subnormal = _mm256_mul_ps(_mm256_cvtepi32_ps(magnitude), _mm256_set1_ps(0x1p-9f));
    const __m256i is_subnormal = _mm256_cmpgt_epi32(_mm256_set1_epi32(8), magnitude);
    __m256 value = _mm256_blendv_ps(normal, subnormal, _mm256_castsi256_ps(is_subnormal));
    const __m256i is_nan = _mm256_cmpeq_epi32(magnitude, _mm256_set1_epi32(0x7F));
    value = _mm256_blendv_ps(value, _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(kE4m3NanBits))),
                             _mm256_castsi256_ps(is_nan));
    return _mm256_or_ps(value, _mm256_castsi256_ps(sign));
}

inline __m256 load_e4m3_avx2(const uint8_t* p) {
    return e4m3_to_float_avx2(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

// 8 floats as codes (one per 32-bit lane), as float_to_e4m3: the normal rounding on the bits, the
// subnormal one as round-to-nearest-even of magnitude * 2^9, then saturation and NaN.
inline __m256i float_to_e4m3_avx2(__m256 x) {
    const __m256i bits = _mm256_castps_si256(x);
    const __m256i sign = _mm256_srli_epi32(_mm256_and_si256(bits, _mm256_set1_epi32(INT32_MIN)), 24);
    const __m256i magnitude_bits = _mm256_and_si256(bits, _mm256_set1_epi32(0x7FFFFFFF));
    const __m256 magnitude = _mm256_castsi256_ps(magnitude_bits);
    const __m256i even = _mm256_and_si256(_mm256_srli_epi32(magnitude_bits, 20), _mm256_set1_epi32(1));
    const __m256i rounded = _mm256_add_epi32(magnitude_bits, _mm256_add_epi32(_mm256_set1_epi32(0x7FFFF), even));
    const __m256i normal = _mm256_sub_epi32(_mm256_srli_epi32(rounded, 20), _mm256_set1_epi32(120 << 3));
    const __m256i subnormal = _mm256_cvttps_epi32(_mm256_round_ps(_mm256_mul_ps(magnitude, _mm256_set1_ps(512.0f)),
                                                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    const __m256 is_subnormal = _mm256_cmp_ps(magnitude, _mm256_set1_ps(0x1p-6f), _CMP_LT_OQ);
    __m256i code = _mm256_blendv_epi8(normal, subnormal, _mm256_castps_si256(is_subnormal));
    const __m256 saturated = _mm256_cmp_ps(magnitude, _mm256_set1_ps(kE4m3Max), _CMP_GT_OQ);
    code = _mm256_blendv_epi8(code, _mm256_set1_epi32(0x7E), _mm256_castps_si256(saturated));
    code = _mm256_blendv_epi8(code, _mm256_set1_epi32(0x7F), _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q)));
    return _mm256_or_si256(code, sign);
}

inline void store_e4m3_avx2(uint8_t* p, __m256i code) {
    const __m128i words = _mm_packus_epi32(_mm256_castsi256_si128(code), _mm256_extracti128_si256(code, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(p), _mm_packus_epi16(words, words));
}

#ifdef __AVX512F__
inline __m512 e4m3_to_float_avx512(__m512i code) {
    const __m512i magnitude = _mm512_and_si512(code, _mm512_set1_epi32(0x7F));
    const __m512i sign = _mm512_slli_epi32(_mm512_and_si512(code, _mm512_set1_epi32(0x80)), 24);
    const __m512 normal =
        _mm512_castsi512_ps(_mm512_add_epi32(_mm512_slli_epi32(magnitude, 20), _mm512_set1_epi32(120 << 23)));
    const __m512 subnormal = _mm512_mul_ps(_mm512_cvtepi32_ps(magnitude), _mm512_set1_ps(0x1p-9f));
    __m512 value = _mm512_mask_blend_ps(_mm512_cmplt_epi32_mask(magnitude, _mm512_set1_epi32(8)), normal, subnormal);
    value = _mm512_mask_blend_ps(_mm512_cmpeq_epi32_mask(magnitude, _mm512_set1_epi32(0x7F)), value,
                                 _mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int>(kE4m3NanBits))));
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(value), sign));
}

inline __m512 load_e4m3_avx512(const uint8_t* p) {
    return e4m3_to_float_avx512(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}

inline __m512i float_to_e4m3_avx512(__m512 x) {
    const __m512i bits = _mm512_castps_si512(x);
    const __m512i sign = _mm512_srli_epi32(_mm512_and_si512(bits, _mm512_set1_epi32(INT32_MIN)), 24);
    const __m512i magnitude_bits = _mm512_and_si512(bits, _mm512_set1_epi32(0x7FFFFFFF));
    const __m512 magnitude = _mm512_castsi512_ps(magnitude_bits);
    const __m512i even = _mm512_and_si512(_mm512_srli_epi32(magnitude_bits, 20), _mm512_set1_epi32(1));
    const __m512i rounded = _mm512_add_epi32(magnitude_bits, _mm512_add_epi32(_mm512_set1_epi32(0x7FFFF), even));
    const __m512i normal = _mm512_sub_epi32(_mm512_srli_epi32(rounded, 20), _mm512_set1_epi32(120 << 3));
    const __m512i subnormal = _mm512_cvttps_epi32(_mm512_roundscale_ps(_mm512_mul_ps(magnitude, _mm512_set1_ps(512.0f)),
                                                                       _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    __m512i code =
        _mm512_mask_blend_epi32(_mm512_cmp_ps_mask(magnitude, _mm512_set1_ps(0x1p-6f), _CMP_LT_OQ), normal, subnormal);
    code = _mm512_mask_blend_epi32(_mm512_cmp_ps_mask(magnitude, _mm512_set1_ps(kE4m3Max), _CMP_GT_OQ), code,
                                   _mm512_set1_epi32(0x7E));
    code = _mm512_mask_blend_epi32(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), code, _mm512_set1_epi32(0x7F));
    return _mm512_or_si512(code, sign);
}

inline void store_e4m3_avx512(uint8_t* p, __m512i code) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_cvtepi32_epi8(code));
}
#endif

}  // namespace tempered
