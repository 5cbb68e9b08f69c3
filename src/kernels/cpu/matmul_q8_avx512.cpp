// AVX-512 VNNI integer kernels: a 512-bit register holds the same block of two weight rows (lanes 0-7
// row a, lanes 8-15 row b), and vpdpbusd forms the lane dot products. Per lane, the arithmetic is the
// one of matmul_kernels.h, so results equal the scalar and AVX2 kernels bit for bit.
#include <immintrin.h>

#include <cstring>

// GCC 12's AVX-512 headers build some intrinsics on _mm512_undefined_*(), which -Wuninitialized then
// reports at every use (a false positive, fixed in later GCC).
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // a GCC warning; clang has no such group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

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

uint32_t load_u32(const void* p) {
    uint32_t value;
    std::memcpy(&value, p, 4);
    return value;
}

// Spreads float `first` of v over lanes 0-7 and float `second` over lanes 8-15.
__m512 spread(__m128 v, int first, int second) {
    const __m512i index = _mm512_inserti64x4(_mm512_set1_epi32(first), _mm256_set1_epi32(second), 1);
    return _mm512_permutexvar_ps(index, _mm512_zextps128_ps512(v));
}

__m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// 32 bytes from each of two rows: row a in the low half, row b in the high half.
__m512i load_pair(const uint8_t* a, const uint8_t* b) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(load32(a)), load32(b), 1);
}

// Bytes shifted right by a run-time count, keeping `mask` bits.
__m512i shift_bytes_right(__m512i v, int count, int mask) {
    return _mm512_and_si512(_mm512_srl_epi16(v, _mm_cvtsi32_si128(count)), _mm512_set1_epi8(static_cast<char>(mask)));
}

// Unsigned quants, one scale and one min per row (Q4_1, Q4_K, Q5_K).
struct UnsignedWithMin {
    __m512i q;      // row a's 32 quants in element order, then row b's
    __m128 scales;  // scale_a, min_a, scale_b, min_b
};

__m512 accumulate_with_min(const UnsignedWithMin& w, __m512i xq, __m512 lane_sums, float dx, __m512 acc) {
    const __m128 scaled = _mm_mul_ps(w.scales, _mm_set1_ps(dx));
    const __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w.q, xq);
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), spread(scaled, 0, 2), acc);
    return _mm512_fmadd_ps(lane_sums, spread(scaled, 1, 3), acc);
}

struct Q4_1Pair {
    using Weights = UnsignedWithMin;
    static Weights load(const uint8_t* row_a, const uint8_t* row_b, int64_t j) {
        const BlockQ4_1& a = reinterpret_cast<const BlockQ4_1*>(row_a)[j];
        const BlockQ4_1& b = reinterpret_cast<const BlockQ4_1*>(row_b)[j];
        const __m256i packed =
            _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a.qs))),
                                    _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs)), 1);
        __m512i all = _mm512_inserti64x4(_mm512_castsi256_si512(packed), _mm256_srli_epi16(packed, 4), 1);
        all = _mm512_shuffle_i64x2(all, all, _MM_SHUFFLE(3, 1, 2, 0));  // low a, high a, low b, high b
        const __m128i halves = _mm_setr_epi32(static_cast<int>(load_u32(&a.d)), static_cast<int>(load_u32(&b.d)), 0, 0);
        return {_mm512_and_si512(all, _mm512_set1_epi8(0x0F)), _mm_cvtph_ps(halves)};
    }
    static __m512 accumulate(const Weights& w, __m512i xq, __m512 lane_sums, float dx, __m512 acc) {
        return accumulate_with_min(w, xq, lane_sums, dx, acc);
    }
};

template <typename Block, bool kFifthBit>
struct Q45KPair {
    using Weights = UnsignedWithMin;
    static Weights load(const uint8_t* row_a, const uint8_t* row_b, int64_t j) {
        const Block& a = reinterpret_cast<const Block*>(row_a)[j / 8];
        const Block& b = reinterpret_cast<const Block*>(row_b)[j / 8];
        const int sub = static_cast<int>(j % 8);
        __m512i q = shift_bytes_right(load_pair(a.qs + 32 * (sub / 2), b.qs + 32 * (sub / 2)), 4 * (sub % 2), 0x0F);
        if constexpr (kFifthBit)
            q = _mm512_or_si512(q, _mm512_slli_epi16(shift_bytes_right(load_pair(a.qh, b.qh), sub, 1), 4));
        uint8_t sc_a, m_a, sc_b, m_b;
        k_quant_scale_min(a.scales, sub, sc_a, m_a);
        k_quant_scale_min(b.scales, sub, sc_b, m_b);
        return {q,
                _mm_setr_ps(_cvtsh_ss(a.d) * static_cast<float>(sc_a), -(_cvtsh_ss(a.dmin) * static_cast<float>(m_a)),
                            _cvtsh_ss(b.d) * static_cast<float>(sc_b), -(_cvtsh_ss(b.dmin) * static_cast<float>(m_b)))};
    }
    static __m512 accumulate(const Weights& w, __m512i xq, __m512 lane_sums, float dx, __m512 acc) {
        return accumulate_with_min(w, xq, lane_sums, dx, acc);
    }
};

struct Q6KPair {
    struct Weights {
        __m512i q;          // stored quants 0..63; the value is q - 32
        __m512 lane_scale;  // d * scale of each lane's 16-element group, row a then row b
    };
    static __m256 lane_scales(const BlockQ6_K& block, int group) {
        const float d = _cvtsh_ss(block.d);
        return _mm256_set_m128(_mm_set1_ps(d * static_cast<float>(block.scales[group + 1])),
                               _mm_set1_ps(d * static_cast<float>(block.scales[group])));
    }
    static Weights load(const uint8_t* row_a, const uint8_t* row_b, int64_t j) {
        const BlockQ6_K& a = reinterpret_cast<const BlockQ6_K*>(row_a)[j / 8];
        const BlockQ6_K& b = reinterpret_cast<const BlockQ6_K*>(row_b)[j / 8];
        const int first = 32 * static_cast<int>(j % 8);
        const int half = first / 128, within = first % 128;
        const int ql_offset = 64 * half + within % 64, qh_offset = 32 * half;
        const __m512i low = shift_bytes_right(load_pair(a.ql + ql_offset, b.ql + ql_offset), 4 * (within / 64), 0x0F);
        const __m512i high = shift_bytes_right(load_pair(a.qh + qh_offset, b.qh + qh_offset), 2 * (within / 32), 0x03);
        const __m512 scales =
            _mm512_insertf32x8(_mm512_castps256_ps512(lane_scales(a, first / 16)), lane_scales(b, first / 16), 1);
        return {_mm512_or_si512(low, _mm512_slli_epi16(high, 4)), scales};
    }
    static __m512 accumulate(const Weights& w, __m512i xq, __m512, float dx, __m512 acc) {
        const __m512i p = _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), w.q, xq),
                                           _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(32), xq));
        return _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(w.lane_scale, _mm512_set1_ps(dx)), acc);
    }
};

struct Q8_0Pair {
    struct Weights {
        __m512i q;
        __m512i minus_offset;  // -128 * (sum of w over each lane): undoes x + 128 below
        __m128 scales;         // d_a, d_b
    };
    static Weights load(const uint8_t* row_a, const uint8_t* row_b, int64_t j) {
        const BlockQ8_0& a = reinterpret_cast<const BlockQ8_0*>(row_a)[j];
        const BlockQ8_0& b = reinterpret_cast<const BlockQ8_0*>(row_b)[j];
        const __m512i q = load_pair(reinterpret_cast<const uint8_t*>(a.qs), reinterpret_cast<const uint8_t*>(b.qs));
        const __m512i offset =
            _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(static_cast<char>(0x80)), q);
        const __m128i halves = _mm_setr_epi16(static_cast<short>(a.d), static_cast<short>(b.d), 0, 0, 0, 0, 0, 0);
        return {q, _mm512_sub_epi32(_mm512_setzero_si512(), offset), _mm_cvtph_ps(halves)};
    }
    // vpdpbusd wants one unsigned operand: (x + 128) * w, then subtract 128 * w. Exact in int32.
    static __m512 accumulate(const Weights& w, __m512i xq, __m512, float dx, __m512 acc) {
        const __m512i x_unsigned = _mm512_xor_si512(xq, _mm512_set1_epi8(static_cast<char>(0x80)));
        const __m512i p = _mm512_dpbusd_epi32(w.minus_offset, x_unsigned, w.q);
        const __m128 scaled = _mm_mul_ps(w.scales, _mm_set1_ps(dx));
        return _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), spread(scaled, 0, 1), acc);
    }
};

// MXFP4: each row's nibbles looked up as their doubled E2M1 values (-12..12), then as Q8_0 with the halved
// power-of-two scales.
struct Mxfp4Pair {
    using Weights = Q8_0Pair::Weights;
    static __m256i values(const BlockMXFP4& block) {
        const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block.qs));
        const __m256i codes =
            _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(packed, 4), packed), _mm256_set1_epi8(0x0F));
        const __m256i table =
            _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4Doubled)));
        return _mm256_shuffle_epi8(table, codes);
    }
    static Weights load(const uint8_t* row_a, const uint8_t* row_b, int64_t j) {
        const BlockMXFP4& a = reinterpret_cast<const BlockMXFP4*>(row_a)[j];
        const BlockMXFP4& b = reinterpret_cast<const BlockMXFP4*>(row_b)[j];
        const __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(values(a)), values(b), 1);
        const __m512i offset =
            _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(static_cast<char>(0x80)), q);
        return {q, _mm512_sub_epi32(_mm512_setzero_si512(), offset),
                _mm_setr_ps(mxfp4_half_scale(a.e), mxfp4_half_scale(b.e), 0.0f, 0.0f)};
    }
    static __m512 accumulate(const Weights& w, __m512i xq, __m512 lane_sums, float dx, __m512 acc) {
        return Q8_0Pair::accumulate(w, xq, lane_sums, dx, acc);
    }
};

using q8_detail::Matrix;

// y[b0 + b, rows of pair p] for p < P, b < B. pair_rows[2p], pair_rows[2p + 1] are the two rows of
// pair p (the same row twice for an odd tail; then only the first is stored).
template <typename Format, int P, int B>
void tile(const Matrix& matrix, const int64_t* pair_rows, bool store_second_of_last, const QuantizedActivations& x,
          int64_t b0, float* y) {
    __m512 acc[P][B];
    for (auto& pair : acc)
        for (auto& a : pair) a = _mm512_setzero_ps();
    const uint8_t* row_a[P];
    const uint8_t* row_b[P];
    for (int p = 0; p < P; ++p) {
        row_a[p] = matrix.data + pair_rows[2 * p] * matrix.row_bytes;
        row_b[p] = matrix.data + pair_rows[2 * p + 1] * matrix.row_bytes;
    }
    const int64_t blocks = x.blocks_per_row;
    // The rows after this tile's come next (rows are consecutive): fetch them while computing.
    const char* prefetch = reinterpret_cast<const char*>(row_a[0] + 2 * P * matrix.row_bytes);
    const int64_t prefetch_step = static_cast<int64_t>((2 * P * matrix.row_bytes + blocks - 1) / blocks);
    for (int64_t j = 0; j < blocks; ++j) {
        for (int64_t line = 0; line < prefetch_step; line += 64)
            _mm_prefetch(prefetch + j * prefetch_step + line, _MM_HINT_T0);
        typename Format::Weights w[P];
        for (int p = 0; p < P; ++p) w[p] = Format::load(row_a[p], row_b[p], j);
        for (int b = 0; b < B; ++b) {
            const __m512i xq = _mm512_broadcast_i64x4(load32(x.block_q(b0 + b, j)));
            const __m512 lane_sums = _mm512_broadcast_f32x8(_mm256_loadu_ps(x.block_lane_sums(b0 + b, j)));
            const float dx = x.block_scale(b0 + b, j);
            for (int p = 0; p < P; ++p) acc[p][b] = Format::accumulate(w[p], xq, lane_sums, dx, acc[p][b]);
        }
    }
    for (int p = 0; p < P; ++p) {
        for (int b = 0; b < B; ++b) {
            float* out = y + (b0 + b) * matrix.rows;
            out[pair_rows[2 * p]] = sum_lanes(_mm512_castps512_ps256(acc[p][b]));
            if (p + 1 < P || store_second_of_last)
                out[pair_rows[2 * p + 1]] = sum_lanes(_mm512_extractf32x8_ps(acc[p][b], 1));
        }
    }
}

// The driver's tiles (matmul_q8_driver.h): P row pairs at a time, each weight block shared by B activation
// rows, then an odd tail. Batches of one or two rows go one activation row at a time over all weight rows.
template <typename Format>
struct Tiles {
    static constexpr int64_t kRowByRowBatch = 2;
    template <int P, int B>
    static void row_range(const Matrix& matrix, const QuantizedActivations& x, int64_t begin, int64_t end, int64_t b0,
                          float* y) {
        int64_t pair_rows[2 * P];
        int64_t r = begin;
        for (; r + 2 * P <= end; r += 2 * P) {
            for (int i = 0; i < 2 * P; ++i) pair_rows[i] = r + i;
            tile<Format, P, B>(matrix, pair_rows, true, x, b0, y);
        }
        for (; r < end; r += 2) {
            pair_rows[0] = r;
            pair_rows[1] = r + 1 < end ? r + 1 : r;
            tile<Format, 1, B>(matrix, pair_rows, r + 1 < end, x, b0, y);
        }
    }
};

template <typename Format>
void rows(const WeightMatrix& weights, const QuantizedActivations& x, float* y, int64_t begin, int64_t end) {
    q8_detail::rows<Tiles<Format>>(weights, x, y, begin, end);
}

}  // namespace

void matmul_q8_rows_avx512(const WeightMatrix& weights, const QuantizedActivations& x, float* y, int64_t row_begin,
                           int64_t row_end) {
    switch (weights.type) {
        case DType::Q4_1: rows<Q4_1Pair>(weights, x, y, row_begin, row_end); break;
        case DType::Q8_0: rows<Q8_0Pair>(weights, x, y, row_begin, row_end); break;
        case DType::Q4_K: rows<Q45KPair<BlockQ4_K, false>>(weights, x, y, row_begin, row_end); break;
        case DType::Q5_K: rows<Q45KPair<BlockQ5_K, true>>(weights, x, y, row_begin, row_end); break;
        case DType::Q6_K: rows<Q6KPair>(weights, x, y, row_begin, row_end); break;
        case DType::MXFP4: rows<Mxfp4Pair>(weights, x, y, row_begin, row_end); break;
        default: matmul_q8_rows_avx2(weights, x, y, row_begin, row_end); break;
    }
}

}  // namespace tempered
