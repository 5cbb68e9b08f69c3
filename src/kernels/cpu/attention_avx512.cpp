// The AVX-512 instantiation of attention_kernel.h: one 512-bit register per vector.
#include <immintrin.h>

#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC 12's AVX-512 headers; see matmul_q8_avx512.cpp
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "kernels/cpu/attention_kernel.h"
#include "kernels/cpu/exp_avx.h"
#include "kernels/cpu/fp8_avx.h"

namespace tempered {
namespace {

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
};

}  // namespace

void attend_run_avx512(const AttentionRun& run, const KvHeadView& kv, std::span<const int32_t> block_table, float scale,
                       float* scratch) {
    attention_detail::attend_run<Avx512Vec>(run, kv, block_table, scale, scratch);
}

}  // namespace tempered
