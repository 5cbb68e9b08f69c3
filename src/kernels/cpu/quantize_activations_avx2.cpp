#include <immintrin.h>

#include "kernels/cpu/quantize_activations.h"

namespace tempered {

void quantize_activations_avx2(const float* x, int64_t batch, int64_t cols, QuantizedActivations& out) {
    resize_activations(batch, cols, out);
    const int64_t blocks = batch * out.blocks_per_row;
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    const __m256i byte_ones = _mm256_set1_epi8(1);
    const __m256i word_ones = _mm256_set1_epi16(1);
    const __m256i unshuffle = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);  // undo the packs' lane interleave
    for (int64_t block = 0; block < blocks; ++block) {
        const float* in = x + block * kActivationBlock;
        __m256 v[4];
        for (int k = 0; k < 4; ++k) v[k] = _mm256_loadu_ps(in + 8 * k);
        __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_and_ps(v[0], abs_mask), _mm256_and_ps(v[1], abs_mask)),
                                 _mm256_max_ps(_mm256_and_ps(v[2], abs_mask), _mm256_and_ps(v[3], abs_mask)));
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        const float amax = _mm_cvtss_f32(m4);
        const float d = amax / 127.0f;
        const __m256 inverse = _mm256_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
        __m256i i32[4];
        for (int k = 0; k < 4; ++k) i32[k] = _mm256_cvtps_epi32(_mm256_mul_ps(v[k], inverse));  // rounds half-even
        const __m256i i16_lo = _mm256_packs_epi32(i32[0], i32[1]);
        const __m256i i16_hi = _mm256_packs_epi32(i32[2], i32[3]);
        const __m256i q = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(i16_lo, i16_hi), unshuffle);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(&out.q[static_cast<size_t>(block * kActivationBlock)]), q);
        out.scale[static_cast<size_t>(block)] = d;
        const __m256i sums = _mm256_madd_epi16(_mm256_maddubs_epi16(byte_ones, q), word_ones);
        _mm256_storeu_ps(&out.lane_sums[static_cast<size_t>(block * kActivationLanes)], _mm256_cvtepi32_ps(sums));
        __m128i total = _mm_add_epi32(_mm256_castsi256_si128(sums), _mm256_extracti128_si256(sums, 1));
        total = _mm_add_epi32(total, _mm_shuffle_epi32(total, _MM_SHUFFLE(1, 0, 3, 2)));
        total = _mm_add_epi32(total, _mm_shuffle_epi32(total, _MM_SHUFFLE(2, 3, 0, 1)));
        const int32_t sum = _mm_cvtsi128_si32(total);
        out.sum[static_cast<size_t>(block)] = sum;
        out.scaled_sum[static_cast<size_t>(block)] = d * static_cast<float>(sum);
    }
}

}  // namespace tempered
