// The AVX-512 16-lane vector of the attention kernels: one 512-bit register.
// Shared by the attention kernels compiled for this instruction set only (attention_avx512.cpp,
// latent_attention_avx512.cpp): the interface is attention_kernel.h's Vec.
#pragma once

#include <immintrin.h>
#include <algorithm>
#include <cstdint>

#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC 12's AVX-512 headers; see matmul_q8_avx512.cpp
#if !defined(__clang__)                           // a GCC warning; clang has no such group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "core/dtype.h"
#include "kernels/cpu/exp_avx.h"
#include "kernels/cpu/fast_exp.h"
#include "kernels/cpu/fp8_avx.h"

namespace tempered::simd {

struct Avx512Vec {
    using Type = __m512;
    static Type zero() { return _mm512_setzero_ps(); }
    static Type set1(float value) { return _mm512_set1_ps(value); }
    static Type load(const float* p) { return _mm512_loadu_ps(p); }
    static void store(float* p, Type v) { _mm512_storeu_ps(p, v); }
    static Type add(Type a, Type b) { return _mm512_add_ps(a, b); }
    static Type sub(Type a, Type b) { return _mm512_sub_ps(a, b); }
    static Type mul(Type a, Type b) { return _mm512_mul_ps(a, b); }
    static Type max(Type a, Type b) { return _mm512_max_ps(a, b); }
    static Type fma(Type a, Type b, Type c) { return _mm512_fmadd_ps(a, b, c); }
    static float hmax(Type v) { return _mm512_reduce_max_ps(v); }
    static float hsum(Type v) {  // lanes i + 8, then + 4, + 2, + 1
        const __m256 eight = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
        const __m128 four = _mm_add_ps(_mm256_castps256_ps128(eight), _mm256_extractf128_ps(eight, 1));
        const __m128 two = _mm_add_ps(four, _mm_movehl_ps(four, four));
        return _mm_cvtss_f32(_mm_add_ss(two, _mm_movehdup_ps(two)));
    }
    static Type keep_first(Type v, int64_t count, float fill) {
        const int kept = static_cast<int>(std::clamp<int64_t>(count, 0, 16));
        const __mmask16 mask = static_cast<__mmask16>((1u << kept) - 1u);
        return _mm512_mask_blend_ps(mask, _mm512_set1_ps(fill), v);
    }
    static Type drop_first(Type v, int64_t count, float fill) {
        const int dropped = static_cast<int>(std::clamp<int64_t>(count, 0, 16));
        const __mmask16 mask = static_cast<__mmask16>((1u << dropped) - 1u);
        return _mm512_mask_blend_ps(mask, v, _mm512_set1_ps(fill));
    }
    // 16 cache elements as floats: exact, so equal to ops.h's kv_to_float.
    template <DType kType>
    static Type load_kv(const uint8_t* p) {
        if constexpr (kType == DType::F16) {
            return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
        } else if constexpr (kType == DType::BF16) {
            const __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
            return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
        } else {
            return _mm512_loadu_ps(reinterpret_cast<const float*>(p));
        }
    }
    static Type load_e4m3(const uint8_t* p) { return load_e4m3_avx512(p); }
    static Type exp(Type x) { return canonical_exp_avx512(x); }
    // out row c (16 floats at out + c * out_stride) = column c of the 16 rows at in + r * in_stride: pairs
    // of rows interleaved, then pairs of pairs (64-bit), then 128-bit lanes regrouped twice.
    static void transpose(const float* in, int64_t in_stride, float* out, int64_t out_stride) {
        __m512 t[16], u[16];
        for (int i = 0; i < 16; i += 2) {
            const __m512 even = _mm512_loadu_ps(in + i * in_stride), odd = _mm512_loadu_ps(in + (i + 1) * in_stride);
            t[i] = _mm512_unpacklo_ps(even, odd);  // per lane L: r_i[4L], r_i+1[4L], r_i[4L+1], r_i+1[4L+1]
            t[i + 1] = _mm512_unpackhi_ps(even, odd);
        }
        for (int g = 0; g < 4; ++g) {  // u[4g + j], lane L: rows 4g .. 4g+3 of column 4L + j
            const __m512d a = _mm512_castps_pd(t[4 * g]), b = _mm512_castps_pd(t[4 * g + 2]);
            const __m512d c = _mm512_castps_pd(t[4 * g + 1]), d = _mm512_castps_pd(t[4 * g + 3]);
            u[4 * g] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
            u[4 * g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
            u[4 * g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(c, d));
            u[4 * g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(c, d));
        }
        for (int j = 0; j < 4; ++j) {
            const __m512 even_lanes_low = _mm512_shuffle_f32x4(u[j], u[4 + j], 0x88);  // lanes 0, 2 of each
            const __m512 odd_lanes_low = _mm512_shuffle_f32x4(u[j], u[4 + j], 0xDD);   // lanes 1, 3 of each
            const __m512 even_lanes_high = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0x88);
            const __m512 odd_lanes_high = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0xDD);
            _mm512_storeu_ps(out + j * out_stride, _mm512_shuffle_f32x4(even_lanes_low, even_lanes_high, 0x88));
            _mm512_storeu_ps(out + (4 + j) * out_stride, _mm512_shuffle_f32x4(odd_lanes_low, odd_lanes_high, 0x88));
            _mm512_storeu_ps(out + (8 + j) * out_stride, _mm512_shuffle_f32x4(even_lanes_low, even_lanes_high, 0xDD));
            _mm512_storeu_ps(out + (12 + j) * out_stride, _mm512_shuffle_f32x4(odd_lanes_low, odd_lanes_high, 0xDD));
        }
    }
};

}  // namespace tempered::simd
