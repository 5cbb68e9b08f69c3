// The AVX2 16-lane vector of the attention kernels: two 256-bit registers (lanes 0-7, 8-15).
// Shared by the attention kernels compiled for this instruction set only (attention_avx2.cpp,
// latent_attention_avx2.cpp): the interface is attention_kernel.h's Vec.
#pragma once

#include <immintrin.h>
#include <algorithm>
#include <cstdint>

#include "core/dtype.h"
#include "kernels/cpu/exp_avx.h"
#include "kernels/cpu/fast_exp.h"
#include "kernels/cpu/fp8_avx.h"

namespace tempered::simd {

struct Avx2Vec {
    struct Type {
        __m256 low, high;
    };
    template <typename Op>
    static Type both(Type a, Type b, Op op) {
        return {op(a.low, b.low), op(a.high, b.high)};
    }
    static Type zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
    static Type set1(float value) { return {_mm256_set1_ps(value), _mm256_set1_ps(value)}; }
    static Type load(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
    static void store(float* p, Type v) {
        _mm256_storeu_ps(p, v.low);
        _mm256_storeu_ps(p + 8, v.high);
    }
    static Type add(Type a, Type b) {
        return both(a, b, [](__m256 x, __m256 y) { return _mm256_add_ps(x, y); });
    }
    static Type sub(Type a, Type b) {
        return both(a, b, [](__m256 x, __m256 y) { return _mm256_sub_ps(x, y); });
    }
    static Type mul(Type a, Type b) {
        return both(a, b, [](__m256 x, __m256 y) { return _mm256_mul_ps(x, y); });
    }
    static Type max(Type a, Type b) {
        return both(a, b, [](__m256 x, __m256 y) { return _mm256_max_ps(x, y); });
    }
    static Type fma(Type a, Type b, Type c) {
        return {_mm256_fmadd_ps(a.low, b.low, c.low), _mm256_fmadd_ps(a.high, b.high, c.high)};
    }
    static float hmax(Type v) {
        const __m256 eight = _mm256_max_ps(v.low, v.high);
        __m128 four = _mm_max_ps(_mm256_castps256_ps128(eight), _mm256_extractf128_ps(eight, 1));
        four = _mm_max_ps(four, _mm_movehl_ps(four, four));
        return _mm_cvtss_f32(_mm_max_ss(four, _mm_movehdup_ps(four)));
    }
    static float hsum(Type v) {  // lanes i + 8, then + 4, + 2, + 1
        const __m256 eight = _mm256_add_ps(v.low, v.high);
        const __m128 four = _mm_add_ps(_mm256_castps256_ps128(eight), _mm256_extractf128_ps(eight, 1));
        const __m128 two = _mm_add_ps(four, _mm_movehl_ps(four, four));
        return _mm_cvtss_f32(_mm_add_ss(two, _mm_movehdup_ps(two)));
    }
    static Type keep_first(Type v, int64_t count, float fill) {
        const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        const __m256i kept = _mm256_set1_epi32(static_cast<int>(std::clamp<int64_t>(count, 0, 16)));
        const __m256 low_mask = _mm256_castsi256_ps(_mm256_cmpgt_epi32(kept, lane));
        const __m256 high_mask =
            _mm256_castsi256_ps(_mm256_cmpgt_epi32(kept, _mm256_add_epi32(lane, _mm256_set1_epi32(8))));
        const __m256 f = _mm256_set1_ps(fill);
        return {_mm256_blendv_ps(f, v.low, low_mask), _mm256_blendv_ps(f, v.high, high_mask)};
    }
    static Type drop_first(Type v, int64_t count, float fill) {
        const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        const __m256i dropped = _mm256_set1_epi32(static_cast<int>(std::clamp<int64_t>(count, 0, 16)));
        const __m256 low_mask = _mm256_castsi256_ps(_mm256_cmpgt_epi32(dropped, lane));
        const __m256 high_mask =
            _mm256_castsi256_ps(_mm256_cmpgt_epi32(dropped, _mm256_add_epi32(lane, _mm256_set1_epi32(8))));
        const __m256 f = _mm256_set1_ps(fill);
        return {_mm256_blendv_ps(v.low, f, low_mask), _mm256_blendv_ps(v.high, f, high_mask)};
    }
    // 16 cache elements as floats: exact, so equal to ops.h's kv_to_float.
    static __m256 load8(DType type, const uint8_t* p) {
        if (type == DType::F16) return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        if (type == DType::BF16) {
            const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
            return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
        }
        return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
    }
    template <DType kType>
    static Type load_kv(const uint8_t* p) {
        constexpr int64_t kHalfBytes = kType == DType::F32 ? 32 : 16;
        return {load8(kType, p), load8(kType, p + kHalfBytes)};
    }
    static Type load_e4m3(const uint8_t* p) { return {load_e4m3_avx2(p), load_e4m3_avx2(p + 8)}; }
    static Type exp(Type v) { return {canonical_exp_avx2(v.low), canonical_exp_avx2(v.high)}; }
    // out row c (16 floats at out + c * out_stride) = column c of the 16 rows at in + r * in_stride: four
    // 8 x 8 transposes.
    static void transpose(const float* in, int64_t in_stride, float* out, int64_t out_stride) {
        for (int64_t r = 0; r < 16; r += 8)
            for (int64_t c = 0; c < 16; c += 8)
                transpose8(in + r * in_stride + c, in_stride, out + c * out_stride + r, out_stride);
    }
    // The 8 x 8 block: pairs of rows interleaved, then pairs of pairs (64-bit), then the 128-bit halves.
    static void transpose8(const float* in, int64_t in_stride, float* out, int64_t out_stride) {
        __m256 t[8], u[8];
        for (int i = 0; i < 8; i += 2) {
            const __m256 even = _mm256_loadu_ps(in + i * in_stride), odd = _mm256_loadu_ps(in + (i + 1) * in_stride);
            t[i] = _mm256_unpacklo_ps(even, odd);
            t[i + 1] = _mm256_unpackhi_ps(even, odd);
        }
        for (int g = 0; g < 2; ++g) {  // u[4g + j], half L: rows 4g .. 4g+3 of column 4L + j
            const __m256d a = _mm256_castps_pd(t[4 * g]), b = _mm256_castps_pd(t[4 * g + 2]);
            const __m256d c = _mm256_castps_pd(t[4 * g + 1]), d = _mm256_castps_pd(t[4 * g + 3]);
            u[4 * g] = _mm256_castpd_ps(_mm256_unpacklo_pd(a, b));
            u[4 * g + 1] = _mm256_castpd_ps(_mm256_unpackhi_pd(a, b));
            u[4 * g + 2] = _mm256_castpd_ps(_mm256_unpacklo_pd(c, d));
            u[4 * g + 3] = _mm256_castpd_ps(_mm256_unpackhi_pd(c, d));
        }
        for (int j = 0; j < 4; ++j) {
            _mm256_storeu_ps(out + j * out_stride, _mm256_permute2f128_ps(u[j], u[4 + j], 0x20));
            _mm256_storeu_ps(out + (4 + j) * out_stride, _mm256_permute2f128_ps(u[j], u[4 + j], 0x31));
        }
    }
};

}  // namespace tempered::simd
