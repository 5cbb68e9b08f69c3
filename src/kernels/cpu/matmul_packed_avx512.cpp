// AVX-512 VNNI kernel over packed weights (packed_weights.h): each vpdpbusd multiplies 4 weights of 16
// rows by 4 activations broadcast to every lane, so one 512-bit register accumulates the dot products of
// a whole row group. A tile's weights are unpacked once and used for up to 8 activation rows.
#include <immintrin.h>

#include <cstring>

#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC 12's AVX-512 headers; see matmul_q8_avx512.cpp
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "kernels/cpu/packed_weights.h"

namespace tempered {
namespace {

constexpr int64_t kPrefetchTiles = 8;

__m512i broadcast_4_bytes(const int8_t* p) {
    int32_t value;
    std::memcpy(&value, p, 4);
    return _mm512_set1_epi32(value);
}

template <DType kType>
struct PackedFormat;

template <>
struct PackedFormat<DType::Q4_1> {
    static constexpr int64_t kTileBytes = 320;
    static void unpack(const uint8_t* group_tiles, int64_t j, __m512i w[8], __m512& d, __m512& m) {
        const uint8_t* tile = group_tiles + j * kTileBytes;
        const __m512i low_nibbles = _mm512_set1_epi8(0x0F);
        for (int c = 0; c < 4; ++c) {
            const __m512i bytes = _mm512_loadu_si512(tile + 64 * c);
            w[2 * c] = _mm512_and_si512(bytes, low_nibbles);
            w[2 * c + 1] = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), low_nibbles);
        }
        d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(tile + 256)));
        m = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(tile + 288)));
    }
    // low, high: the integer dot products of the 16 rows over the block's first and last 16 elements.
    static __m512 accumulate(__m512i low, __m512i high, __m512 d, __m512 m, const QuantizedActivations& x, int64_t b,
                             int64_t j, __m512 acc) {
        const __m512i p = _mm512_add_epi32(low, high);
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(d, _mm512_set1_ps(x.block_scale(b, j))), acc);
        return _mm512_fmadd_ps(m, _mm512_set1_ps(x.block_scaled_sum(b, j)), acc);
    }
};

template <>
struct PackedFormat<DType::Q8_0> {
    static constexpr int64_t kTileBytes = 544;
    static void unpack(const uint8_t* group_tiles, int64_t j, __m512i w[8], __m512& d, __m512&) {
        const uint8_t* tile = group_tiles + j * kTileBytes;
        for (int c = 0; c < 8; ++c) w[c] = _mm512_loadu_si512(tile + 64 * c);
        d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(tile + 512)));
    }
    // The stored quants are q + 128: subtract 128 * (sum of the activation block) for the signed product.
    static __m512 accumulate(__m512i low, __m512i high, __m512 d, __m512, const QuantizedActivations& x, int64_t b,
                             int64_t j, __m512 acc) {
        const __m512i p = _mm512_sub_epi32(_mm512_add_epi32(low, high), _mm512_set1_epi32(128 * x.block_sum(b, j)));
        return _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(d, _mm512_set1_ps(x.block_scale(b, j))), acc);
    }
};

template <>
struct PackedFormat<DType::Q5_0> {
    static constexpr int64_t kTileBytes = 352;
    // The nibbles as for Q4_1, then 16 added to the bytes whose fifth bit is set: q = 0..31.
    static void unpack(const uint8_t* group_tiles, int64_t j, __m512i w[8], __m512& d, __m512&) {
        const uint8_t* tile = group_tiles + j * kTileBytes;
        const __m512i low_nibbles = _mm512_set1_epi8(0x0F), sixteen = _mm512_set1_epi8(16);
        for (int c = 0; c < 4; ++c) {
            const __m512i bytes = _mm512_loadu_si512(tile + 64 * c);
            w[2 * c] = _mm512_and_si512(bytes, low_nibbles);
            w[2 * c + 1] = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), low_nibbles);
        }
        for (int i = 0; i < 8; ++i) {
            uint64_t high_bits;
            std::memcpy(&high_bits, tile + 256 + 8 * i, 8);
            w[i] = _mm512_mask_add_epi8(w[i], _cvtu64_mask64(high_bits), w[i], sixteen);
        }
        d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(tile + 320)));
    }
    // The weights are q - 16: subtract 16 * (sum of the activation block) for the signed product.
    static __m512 accumulate(__m512i low, __m512i high, __m512 d, __m512, const QuantizedActivations& x, int64_t b,
                             int64_t j, __m512 acc) {
        const __m512i p = _mm512_sub_epi32(_mm512_add_epi32(low, high), _mm512_set1_epi32(16 * x.block_sum(b, j)));
        return _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(d, _mm512_set1_ps(x.block_scale(b, j))), acc);
    }
};

template <>
struct PackedFormat<DType::Q6_K> {
    static constexpr int64_t kTileBytes = 3360, kSubTileBytes = 416;
    // w: q (0..63) as the Q4_1 nibbles plus 16 and 32 where bits 4 and 5 are set. d, m: the 16 rows'
    // d * scale of the block's first and last 16 elements.
    static void unpack(const uint8_t* group_tiles, int64_t j, __m512i w[8], __m512& d, __m512& m) {
        const uint8_t* super_tile = group_tiles + j / 8 * kTileBytes;
        const uint8_t* sub = super_tile + j % 8 * kSubTileBytes;
        const __m512i low_nibbles = _mm512_set1_epi8(0x0F), sixteen = _mm512_set1_epi8(16);
        const __m512i thirty_two = _mm512_set1_epi8(32);
        for (int c = 0; c < 4; ++c) {
            const __m512i bytes = _mm512_loadu_si512(sub + 64 * c);
            w[2 * c] = _mm512_and_si512(bytes, low_nibbles);
            w[2 * c + 1] = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), low_nibbles);
        }
        for (int i = 0; i < 8; ++i) {
            uint64_t high_bits[2];
            std::memcpy(high_bits, sub + 256 + 16 * i, 16);
            w[i] = _mm512_mask_add_epi8(w[i], _cvtu64_mask64(high_bits[0]), w[i], sixteen);
            w[i] = _mm512_mask_add_epi8(w[i], _cvtu64_mask64(high_bits[1]), w[i], thirty_two);
        }
        const __m512 row_d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(super_tile + 3328)));
        const auto scales = [&](int offset) {
            const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(sub + offset));
            return _mm512_mul_ps(row_d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes)));
        };
        d = scales(384);
        m = scales(400);
    }
    // The weights are q, not q - 32: subtract 32 * (sum of each half of the activation block).
    static __m512 accumulate(__m512i low, __m512i high, __m512 d, __m512 m, const QuantizedActivations& x, int64_t b,
                             int64_t j, __m512 acc) {
        const float* lane_sums = x.block_lane_sums(b, j);
        const auto half_sum = [&](int h) {
            return static_cast<int32_t>(lane_sums[4 * h] + lane_sums[4 * h + 1] + lane_sums[4 * h + 2] +
                                        lane_sums[4 * h + 3]);
        };
        low = _mm512_sub_epi32(low, _mm512_set1_epi32(32 * half_sum(0)));
        high = _mm512_sub_epi32(high, _mm512_set1_epi32(32 * half_sum(1)));
        const __m512 dx = _mm512_set1_ps(x.block_scale(b, j));
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(low), _mm512_mul_ps(d, dx), acc);
        return _mm512_fmadd_ps(_mm512_cvtepi32_ps(high), _mm512_mul_ps(m, dx), acc);
    }
};

template <>
struct PackedFormat<DType::Q4_K> {
    static constexpr int64_t kTileBytes = 2368, kSubTileBytes = 288;
    // w: the nibbles as for Q4_1. d: the 16 rows' d * sc; m: their -(dmin * mn).
    static void unpack(const uint8_t* group_tiles, int64_t j, __m512i w[8], __m512& d, __m512& m) {
        const uint8_t* super_tile = group_tiles + j / 8 * kTileBytes;
        const uint8_t* sub = super_tile + j % 8 * kSubTileBytes;
        const __m512i low_nibbles = _mm512_set1_epi8(0x0F);
        for (int c = 0; c < 4; ++c) {
            const __m512i bytes = _mm512_loadu_si512(sub + 64 * c);
            w[2 * c] = _mm512_and_si512(bytes, low_nibbles);
            w[2 * c + 1] = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), low_nibbles);
        }
        const auto bytes_as_floats = [&](int offset) {
            const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(sub + offset));
            return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(bytes));
        };
        const auto halves = [&](int offset) {
            return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(super_tile + offset)));
        };
        d = _mm512_mul_ps(halves(2304), bytes_as_floats(256));
        const __m512 min = _mm512_mul_ps(halves(2336), bytes_as_floats(272));
        const __m512i sign = _mm512_set1_epi32(static_cast<int32_t>(0x80000000u));
        m = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(min), sign));  // -min, as the scalar's
    }
    static __m512 accumulate(__m512i low, __m512i high, __m512 d, __m512 m, const QuantizedActivations& x, int64_t b,
                             int64_t j, __m512 acc) {
        return PackedFormat<DType::Q4_1>::accumulate(low, high, d, m, x, b, j, acc);
    }
};

// Bytes per 32-column block: the K-quants' tiles span 8 blocks.
template <DType kType>
constexpr int64_t kBlockBytes = PackedFormat<kType>::kTileBytes /
                                (kType == DType::Q6_K || kType == DType::Q4_K ? 8 : 1);

// Row group `group` against activation rows [b0, b0 + T).
template <DType kType, int T>
void group_tile(const uint8_t* group_tiles, int64_t blocks, const QuantizedActivations& x, int64_t b0, float* y,
                int64_t y_stride) {
    using Format = PackedFormat<kType>;
    __m512 acc[T];
    for (auto& a : acc) a = _mm512_setzero_ps();
    for (int64_t j = 0; j < blocks; ++j) {
        // The tiles after this one come next (the group's, then the next group's): fetch them early.
        const uint8_t* ahead = group_tiles + (j + kPrefetchTiles) * kBlockBytes<kType>;
        for (int64_t line = 0; line < kBlockBytes<kType>; line += 64)
            _mm_prefetch(reinterpret_cast<const char*>(ahead + line), _MM_HINT_T0);
        __m512i w[8];
        __m512 d, m;
        Format::unpack(group_tiles, j, w, d, m);
        for (int t = 0; t < T; ++t) {
            const int8_t* xq = x.block_q(b0 + t, j);
            // Two independent chains, over the block's first and last 16 elements, halve the latency of
            // the eight dependent vpdpbusd.
            __m512i low = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[0], broadcast_4_bytes(xq));
            __m512i high = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[4], broadcast_4_bytes(xq + 16));
            for (int i = 1; i < 4; ++i) {
                low = _mm512_dpbusd_epi32(low, w[i], broadcast_4_bytes(xq + 4 * i));
                high = _mm512_dpbusd_epi32(high, w[i + 4], broadcast_4_bytes(xq + 16 + 4 * i));
            }
            acc[t] = Format::accumulate(low, high, d, m, x, b0 + t, j, acc[t]);
        }
    }
    for (int t = 0; t < T; ++t) _mm512_storeu_ps(y + (b0 + t) * y_stride, acc[t]);
}

template <DType kType>
void groups(const WeightMatrix& packed, const QuantizedActivations& x, float* y, int64_t group_begin,
            int64_t group_end) {
    const int64_t blocks = x.blocks_per_row;
    const auto* data = static_cast<const uint8_t*>(packed.data);
    for (int64_t g = group_begin; g < group_end; ++g) {
        const uint8_t* tiles = data + g * blocks * kBlockBytes<kType>;
        float* out = y + g * kPackedRows;
        int64_t b = 0;
        for (; b + 8 <= x.batch; b += 8) group_tile<kType, 8>(tiles, blocks, x, b, out, packed.rows);
        if (b + 4 <= x.batch) {
            group_tile<kType, 4>(tiles, blocks, x, b, out, packed.rows);
            b += 4;
        }
        if (b + 2 <= x.batch) {
            group_tile<kType, 2>(tiles, blocks, x, b, out, packed.rows);
            b += 2;
        }
        if (b < x.batch) group_tile<kType, 1>(tiles, blocks, x, b, out, packed.rows);
    }
}

}  // namespace

void matmul_packed_groups_avx512(const WeightMatrix& packed, const QuantizedActivations& x, float* y,
                                 int64_t group_begin, int64_t group_end) {
    if (packed.type == DType::Q4_1)
        groups<DType::Q4_1>(packed, x, y, group_begin, group_end);
    else if (packed.type == DType::Q5_0)
        groups<DType::Q5_0>(packed, x, y, group_begin, group_end);
    else if (packed.type == DType::Q6_K)
        groups<DType::Q6_K>(packed, x, y, group_begin, group_end);
    else if (packed.type == DType::Q4_K)
        groups<DType::Q4_K>(packed, x, y, group_begin, group_end);
    else
        groups<DType::Q8_0>(packed, x, y, group_begin, group_end);
}

}  // namespace tempered
