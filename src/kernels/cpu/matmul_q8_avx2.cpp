// AVX2 integer kernels: one 32-weight block per 256-bit register, maddubs + madd for the lane dot
// products. A tile of R weight rows by B activation rows shares each unpacked weight block across
// the B activation rows (prefill) and keeps R independent accumulators in flight (decode).
#include <immintrin.h>

#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/matmul_q8_driver.h"
#include "kernels/cpu/quant_blocks.h"

namespace tempered {
namespace {

float sum_lanes(__m256 acc) {  // ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7))
    __m128 four = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    __m128 two = _mm_add_ps(four, _mm_movehl_ps(four, four));
    return _mm_cvtss_f32(_mm_add_ss(two, _mm_movehdup_ps(two)));
}

// Lane l = sum over bytes 4l .. 4l+3 of unsigned * signed; exact while pairs stay within int16.
__m256i lane_dot(__m256i unsigned_bytes, __m256i signed_bytes) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(unsigned_bytes, signed_bytes), _mm256_set1_epi16(1));
}

__m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// Bytes shifted right by a run-time count, keeping `mask` bits.
__m256i shift_bytes_right(__m256i v, int count, int mask) {
    return _mm256_and_si256(_mm256_srl_epi16(v, _mm_cvtsi32_si128(count)), _mm256_set1_epi8(static_cast<char>(mask)));
}

// Unsigned quants with one scale and a min for the whole block (Q4_1, Q4_K, Q5_K).
struct UnsignedWithMin {
    __m256i q;
    float scale, min;
};

__m256 accumulate_with_min(const UnsignedWithMin& w, __m256i xq, const float* lane_sums, float dx, __m256 acc) {
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(lane_dot(w.q, xq)), _mm256_set1_ps(w.scale * dx), acc);
    return _mm256_fmadd_ps(_mm256_loadu_ps(lane_sums), _mm256_set1_ps(w.min * dx), acc);
}

struct Q4_1Format {
    using Weights = UnsignedWithMin;
    static Weights load(const uint8_t* row, int64_t j) {
        const BlockQ4_1& block = reinterpret_cast<const BlockQ4_1*>(row)[j];
        const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block.qs));
        const __m256i both = _mm256_set_m128i(_mm_srli_epi16(packed, 4), packed);
        return {_mm256_and_si256(both, _mm256_set1_epi8(0x0F)), _cvtsh_ss(block.d), _cvtsh_ss(block.m)};
    }
    static __m256 accumulate(const Weights& w, __m256i xq, const float* lane_sums, float dx, __m256 acc) {
        return accumulate_with_min(w, xq, lane_sums, dx, acc);
    }
};

template <typename Block, bool kFifthBit>
struct Q45KFormat {
    using Weights = UnsignedWithMin;
    static Weights load(const uint8_t* row, int64_t j) {
        const Block& block = reinterpret_cast<const Block*>(row)[j / 8];
        const int sub = static_cast<int>(j % 8);
        uint8_t sc, m;
        k_quant_scale_min(block.scales, sub, sc, m);
        __m256i q = shift_bytes_right(load32(block.qs + 32 * (sub / 2)), 4 * (sub % 2), 0x0F);
        if constexpr (kFifthBit)
            q = _mm256_or_si256(q, _mm256_slli_epi16(shift_bytes_right(load32(block.qh), sub, 1), 4));
        return {q, _cvtsh_ss(block.d) * static_cast<float>(sc), -(_cvtsh_ss(block.dmin) * static_cast<float>(m))};
    }
    static __m256 accumulate(const Weights& w, __m256i xq, const float* lane_sums, float dx, __m256 acc) {
        return accumulate_with_min(w, xq, lane_sums, dx, acc);
    }
};

struct Q8_0Format {
    struct Weights {
        __m256i q, magnitude;
        float d;
    };
    static Weights load(const uint8_t* row, int64_t j) {
        const BlockQ8_0& block = reinterpret_cast<const BlockQ8_0*>(row)[j];
        const __m256i q = load32(block.qs);
        return {q, _mm256_abs_epi8(q), _cvtsh_ss(block.d)};
    }
    // w * x = |w| * (x with w's sign); |w| <= 128 and |x| <= 127 keep maddubs exact.
    static __m256 accumulate(const Weights& w, __m256i xq, const float*, float dx, __m256 acc) {
        const __m256i p = lane_dot(w.magnitude, _mm256_sign_epi8(xq, w.q));
        return _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(w.d * dx), acc);
    }
};

// MXFP4: each nibble looked up as its doubled E2M1 value (-12..12), then as Q8_0 with the halved power-of-two scale.
struct Mxfp4Format {
    using Weights = Q8_0Format::Weights;
    static Weights load(const uint8_t* row, int64_t j) {
        const BlockMXFP4& block = reinterpret_cast<const BlockMXFP4*>(row)[j];
        const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block.qs));
        const __m256i codes =
            _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(packed, 4), packed), _mm256_set1_epi8(0x0F));
        const __m256i table =
            _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4Doubled)));
        const __m256i q = _mm256_shuffle_epi8(table, codes);
        return {q, _mm256_abs_epi8(q), mxfp4_half_scale(block.e)};
    }
    static __m256 accumulate(const Weights& w, __m256i xq, const float* lane_sums, float dx, __m256 acc) {
        return Q8_0Format::accumulate(w, xq, lane_sums, dx, acc);
    }
};

struct Q6KFormat {
    struct Weights {
        __m256i q;          // stored quants 0..63; the value is q - 32
        __m256 lane_scale;  // d * scale of the lane's 16-element group
    };
    static Weights load(const uint8_t* row, int64_t j) {
        const BlockQ6_K& block = reinterpret_cast<const BlockQ6_K*>(row)[j / 8];
        const int first = 32 * static_cast<int>(j % 8);
        const int half = first / 128, within = first % 128;
        const __m256i low = shift_bytes_right(load32(block.ql + 64 * half + within % 64), 4 * (within / 64), 0x0F);
        const __m256i high = shift_bytes_right(load32(block.qh + 32 * half), 2 * (within / 32), 0x03);
        const float d = _cvtsh_ss(block.d);
        const __m256 lane_scale = _mm256_set_m128(_mm_set1_ps(d * static_cast<float>(block.scales[first / 16 + 1])),
                                                  _mm_set1_ps(d * static_cast<float>(block.scales[first / 16])));
        return {_mm256_or_si256(low, _mm256_slli_epi16(high, 4)), lane_scale};
    }
    static __m256 accumulate(const Weights& w, __m256i xq, const float*, float dx, __m256 acc) {
        const __m256i p = _mm256_sub_epi32(lane_dot(w.q, xq), lane_dot(_mm256_set1_epi8(32), xq));
        return _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_mul_ps(w.lane_scale, _mm256_set1_ps(dx)), acc);
    }
};

using q8_detail::Matrix;

// y[b0 + b, r0 + r] for r < R, b < B.
template <typename Format, int R, int B>
void tile(const Matrix& w_matrix, const QuantizedActivations& x, int64_t r0, int64_t b0, float* y) {
    __m256 acc[R][B];
    for (auto& row : acc)
        for (auto& a : row) a = _mm256_setzero_ps();
    const int64_t blocks = x.blocks_per_row;
    // The rows after this tile's come next: fetch them while computing.
    const char* prefetch = reinterpret_cast<const char*>(w_matrix.data + (r0 + R) * w_matrix.row_bytes);
    const int64_t prefetch_step = static_cast<int64_t>((R * w_matrix.row_bytes + blocks - 1) / blocks);
    for (int64_t j = 0; j < blocks; ++j) {
        for (int64_t line = 0; line < prefetch_step; line += 64)
            _mm_prefetch(prefetch + j * prefetch_step + line, _MM_HINT_T0);
        typename Format::Weights w[R];
        for (int r = 0; r < R; ++r) w[r] = Format::load(w_matrix.data + (r0 + r) * w_matrix.row_bytes, j);
        for (int b = 0; b < B; ++b) {
            const __m256i xq = load32(x.block_q(b0 + b, j));
            const float* lane_sums = x.block_lane_sums(b0 + b, j);
            const float dx = x.block_scale(b0 + b, j);
            for (int r = 0; r < R; ++r) acc[r][b] = Format::accumulate(w[r], xq, lane_sums, dx, acc[r][b]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int b = 0; b < B; ++b) y[(b0 + b) * w_matrix.rows + r0 + r] = sum_lanes(acc[r][b]);
}

// The driver's tiles (matmul_q8_driver.h): R rows at a time, each weight block shared by B activation rows.
template <typename Format>
struct Tiles {
    static constexpr int64_t kRowByRowBatch = 1;
    template <int R, int B>
    static void row_range(const Matrix& matrix, const QuantizedActivations& x, int64_t begin, int64_t end, int64_t b0,
                          float* y) {
        int64_t r = begin;
        for (; r + R <= end; r += R) tile<Format, R, B>(matrix, x, r, b0, y);
        for (; r < end; ++r) tile<Format, 1, B>(matrix, x, r, b0, y);
    }
};

template <typename Format>
void rows(const WeightMatrix& weights, const QuantizedActivations& x, float* y, int64_t begin, int64_t end) {
    q8_detail::rows<Tiles<Format>>(weights, x, y, begin, end);
}

}  // namespace

void matmul_q8_rows_avx2(const WeightMatrix& weights, const QuantizedActivations& x, float* y, int64_t row_begin,
                         int64_t row_end) {
    switch (weights.type) {
        case DType::Q4_1: rows<Q4_1Format>(weights, x, y, row_begin, row_end); break;
        case DType::Q8_0: rows<Q8_0Format>(weights, x, y, row_begin, row_end); break;
        case DType::Q4_K: rows<Q45KFormat<BlockQ4_K, false>>(weights, x, y, row_begin, row_end); break;
        case DType::Q5_K: rows<Q45KFormat<BlockQ5_K, true>>(weights, x, y, row_begin, row_end); break;
        case DType::Q6_K: rows<Q6KFormat>(weights, x, y, row_begin, row_end); break;
        case DType::MXFP4: rows<Mxfp4Format>(weights, x, y, row_begin, row_end); break;
        default: break;
    }
}

}  // namespace tempered
