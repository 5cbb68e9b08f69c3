// AVX2 kernel over packed weights (packed_weights.h). A 256-bit register holds half a tile row group
// (8 rows x 4 weights), so each group is done as two halves of 8 rows. Without VNNI the byte products
// go through vpmaddubsw: Q4_1's 4-bit weights keep every 16-bit partial sum exact (8 x 2 x 15 x 127 <
// 2^15); Q5_0's 5-bit weights keep sums of 4 such products exact (4 x 2 x 31 x 127 < 2^15, activations
// being at most 127 in magnitude) before widening; Q8_0 uses the sign trick and widens to 32 bits after
// each step.
#include <immintrin.h>

#include <cstring>

#include "kernels/cpu/packed_weights.h"
#include "kernels/cpu/quant_blocks.h"

namespace tempered {
namespace {

__m256i broadcast_4_bytes(const int8_t* p) {
    int32_t value;
    std::memcpy(&value, p, 4);
    return _mm256_set1_epi32(value);
}

__m256i load_256(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

__m256 load_halves(const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }

// Rows [8h, 8h + 8) of one Q4_1 row group against activation rows [b0, b0 + T).
template <int T>
void q4_1_half(const uint8_t* group_tiles, int64_t blocks, int h, const QuantizedActivations& x, int64_t b0, float* y,
               int64_t y_stride) {
    constexpr int64_t kTileBytes = 320;
    const __m256i low_nibbles = _mm256_set1_epi8(0x0F), word_ones = _mm256_set1_epi16(1);
    __m256 acc[T];
    for (auto& a : acc) a = _mm256_setzero_ps();
    for (int64_t j = 0; j < blocks; ++j) {
        const uint8_t* tile = group_tiles + j * kTileBytes;
        __m256i w[8];
        for (int c = 0; c < 4; ++c) {
            const __m256i bytes = load_256(tile + 64 * c + 32 * h);
            w[2 * c] = _mm256_and_si256(bytes, low_nibbles);
            w[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low_nibbles);
        }
        const __m256 d = load_halves(tile + 256 + 16 * h), m = load_halves(tile + 288 + 16 * h);
        for (int t = 0; t < T; ++t) {
            const int8_t* xq = x.block_q(b0 + t, j);
            __m256i sum16 = _mm256_maddubs_epi16(w[0], broadcast_4_bytes(xq));
            for (int i = 1; i < 8; ++i)
                sum16 = _mm256_add_epi16(sum16, _mm256_maddubs_epi16(w[i], broadcast_4_bytes(xq + 4 * i)));
            const __m256i p = _mm256_madd_epi16(sum16, word_ones);
            const float dx = x.block_scale(b0 + t, j);
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_mul_ps(d, _mm256_set1_ps(dx)), acc[t]);
            acc[t] = _mm256_fmadd_ps(m, _mm256_set1_ps(x.block_scaled_sum(b0 + t, j)), acc[t]);
        }
    }
    for (int t = 0; t < T; ++t) _mm256_storeu_ps(y + (b0 + t) * y_stride + 8 * h, acc[t]);
}

// The same for Q8_0: stored bytes are q + 128; flipping the top bit gives q as a signed byte.
template <int T>
void q8_0_half(const uint8_t* group_tiles, int64_t blocks, int h, const QuantizedActivations& x, int64_t b0, float* y,
               int64_t y_stride) {
    constexpr int64_t kTileBytes = 544;
    const __m256i top_bit = _mm256_set1_epi8(static_cast<char>(0x80)), word_ones = _mm256_set1_epi16(1);
    __m256 acc[T];
    for (auto& a : acc) a = _mm256_setzero_ps();
    for (int64_t j = 0; j < blocks; ++j) {
        const uint8_t* tile = group_tiles + j * kTileBytes;
        const __m256 d = load_halves(tile + 512 + 16 * h);
        for (int t = 0; t < T; ++t) {
            const int8_t* xq = x.block_q(b0 + t, j);
            __m256i p = _mm256_setzero_si256();
            for (int c = 0; c < 8; ++c) {
                const __m256i w = _mm256_xor_si256(load_256(tile + 64 * c + 32 * h), top_bit);
                // |w| * (x with w's sign): vpmaddubsw's unsigned operand must be the weights' magnitude.
                const __m256i products =
                    _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(broadcast_4_bytes(xq + 4 * c), w));
                p = _mm256_add_epi32(p, _mm256_madd_epi16(products, word_ones));
            }
            const float dx = x.block_scale(b0 + t, j);
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_mul_ps(d, _mm256_set1_ps(dx)), acc[t]);
        }
    }
    for (int t = 0; t < T; ++t) _mm256_storeu_ps(y + (b0 + t) * y_stride + 8 * h, acc[t]);
}

// The 8 rows' integer dot products with an activation block, from `start`: weights of at most 31 keep sums of 4
// vpmaddubsw results exact (4 x 2 x 31 x 127 < 2^15, activations being at most 127 in magnitude), so each half of
// the block is summed in 16 bits, then widened.
__m256i dot_in_halves(const __m256i w[8], const int8_t* xq, __m256i start) {
    const __m256i word_ones = _mm256_set1_epi16(1);
    __m256i p = start;
    for (int half = 0; half < 2; ++half) {
        __m256i sum16 = _mm256_maddubs_epi16(w[4 * half], broadcast_4_bytes(xq + 16 * half));
        for (int i = 1; i < 4; ++i)
            sum16 = _mm256_add_epi16(sum16,
                                     _mm256_maddubs_epi16(w[4 * half + i], broadcast_4_bytes(xq + 16 * half + 4 * i)));
        p = _mm256_add_epi32(p, _mm256_madd_epi16(sum16, word_ones));
    }
    return p;
}

// Byte j of the result is 0xFF when bit j of `bits` is set, else 0.
__m256i expand_bits(uint32_t bits) {
    const __m256i byte_of_bit = _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303);
    const __m256i bit_in_byte = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201));
    const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int32_t>(bits)), byte_of_bit);
    return _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit_in_byte), bit_in_byte);
}

// The same for Q5_0: the Q4_1 nibbles plus 16 where the fifth bit is set, so the weights are q (0..31)
// and the signed product subtracts 16 * (sum of the activation block), in halves (dot_in_halves).
template <int T>
void q5_0_half(const uint8_t* group_tiles, int64_t blocks, int h, const QuantizedActivations& x, int64_t b0, float* y,
               int64_t y_stride) {
    constexpr int64_t kTileBytes = 352;
    const __m256i low_nibbles = _mm256_set1_epi8(0x0F), sixteen = _mm256_set1_epi8(16);
    __m256 acc[T];
    for (auto& a : acc) a = _mm256_setzero_ps();
    for (int64_t j = 0; j < blocks; ++j) {
        const uint8_t* tile = group_tiles + j * kTileBytes;
        __m256i w[8];
        for (int c = 0; c < 4; ++c) {
            const __m256i bytes = load_256(tile + 64 * c + 32 * h);
            w[2 * c] = _mm256_and_si256(bytes, low_nibbles);
            w[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low_nibbles);
        }
        for (int i = 0; i < 8; ++i) {
            uint32_t high_bits;  // this half's 32 bits of register i's 64-bit mask
            std::memcpy(&high_bits, tile + 256 + 8 * i + 4 * h, 4);
            w[i] = _mm256_or_si256(w[i], _mm256_and_si256(expand_bits(high_bits), sixteen));
        }
        const __m256 d = load_halves(tile + 320 + 16 * h);
        for (int t = 0; t < T; ++t) {
            const __m256i p = dot_in_halves(w, x.block_q(b0 + t, j), _mm256_set1_epi32(-16 * x.block_sum(b0 + t, j)));
            const float dx = x.block_scale(b0 + t, j);
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_mul_ps(d, _mm256_set1_ps(dx)), acc[t]);
        }
    }
    for (int t = 0; t < T; ++t) _mm256_storeu_ps(y + (b0 + t) * y_stride + 8 * h, acc[t]);
}

// The same for Q6_K: q (0..63) from the nibbles and two bit masks, each 16-element half of the block
// with its own scale (d * int8 scale). Products of 6-bit weights keep sums of 2 vpmaddubsw results
// exact (2 x 2 x 63 x 127 < 2^15) before widening.
template <int T>
void q6_k_half(const uint8_t* group_tiles, int64_t blocks, int h, const QuantizedActivations& x, int64_t b0, float* y,
               int64_t y_stride) {
    constexpr int64_t kTileBytes = 3360, kSubTileBytes = 416;
    const __m256i low_nibbles = _mm256_set1_epi8(0x0F), sixteen = _mm256_set1_epi8(16);
    const __m256i thirty_two = _mm256_set1_epi8(32), word_ones = _mm256_set1_epi16(1);
    __m256 acc[T];
    for (auto& a : acc) a = _mm256_setzero_ps();
    for (int64_t j = 0; j < blocks; ++j) {
        const uint8_t* super_tile = group_tiles + j / 8 * kTileBytes;
        const uint8_t* sub = super_tile + j % 8 * kSubTileBytes;
        __m256i w[8];
        for (int c = 0; c < 4; ++c) {
            const __m256i bytes = load_256(sub + 64 * c + 32 * h);
            w[2 * c] = _mm256_and_si256(bytes, low_nibbles);
            w[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low_nibbles);
        }
        for (int i = 0; i < 8; ++i) {
            uint32_t bit4, bit5;  // this half's 32 bits of register i's two 64-bit masks
            std::memcpy(&bit4, sub + 256 + 16 * i + 4 * h, 4);
            std::memcpy(&bit5, sub + 264 + 16 * i + 4 * h, 4);
            w[i] = _mm256_or_si256(w[i], _mm256_and_si256(expand_bits(bit4), sixteen));
            w[i] = _mm256_or_si256(w[i], _mm256_and_si256(expand_bits(bit5), thirty_two));
        }
        const __m256 row_d = load_halves(super_tile + 3328 + 16 * h);
        __m256 scale[2];
        for (int half = 0; half < 2; ++half) {
            const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sub + 384 + 16 * half + 8 * h));
            scale[half] = _mm256_mul_ps(row_d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes)));
        }
        for (int t = 0; t < T; ++t) {
            const int8_t* xq = x.block_q(b0 + t, j);
            const float* lane_sums = x.block_lane_sums(b0 + t, j);
            const __m256 dx = _mm256_set1_ps(x.block_scale(b0 + t, j));
            for (int half = 0; half < 2; ++half) {
                const auto x_sum = static_cast<int32_t>(lane_sums[4 * half] + lane_sums[4 * half + 1] +
                                                        lane_sums[4 * half + 2] + lane_sums[4 * half + 3]);
                __m256i p = _mm256_set1_epi32(-32 * x_sum);
                for (int i = 4 * half; i < 4 * half + 4; i += 2) {
                    const __m256i sum16 =
                        _mm256_add_epi16(_mm256_maddubs_epi16(w[i], broadcast_4_bytes(xq + 4 * i)),
                                         _mm256_maddubs_epi16(w[i + 1], broadcast_4_bytes(xq + 4 * i + 4)));
                    p = _mm256_add_epi32(p, _mm256_madd_epi16(sum16, word_ones));
                }
                acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_mul_ps(scale[half], dx), acc[t]);
            }
        }
    }
    for (int t = 0; t < T; ++t) _mm256_storeu_ps(y + (b0 + t) * y_stride + 8 * h, acc[t]);
}

// The same for Q4_K: the Q4_1 arithmetic with per-row d * sc and -(dmin * mn) in place of d and m.
template <int T>
void q4_k_half(const uint8_t* group_tiles, int64_t blocks, int h, const QuantizedActivations& x, int64_t b0, float* y,
               int64_t y_stride) {
    constexpr int64_t kTileBytes = 2368, kSubTileBytes = 288;
    const __m256i low_nibbles = _mm256_set1_epi8(0x0F), word_ones = _mm256_set1_epi16(1);
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 acc[T];
    for (auto& a : acc) a = _mm256_setzero_ps();
    for (int64_t j = 0; j < blocks; ++j) {
        const uint8_t* super_tile = group_tiles + j / 8 * kTileBytes;
        const uint8_t* sub = super_tile + j % 8 * kSubTileBytes;
        __m256i w[8];
        for (int c = 0; c < 4; ++c) {
            const __m256i bytes = load_256(sub + 64 * c + 32 * h);
            w[2 * c] = _mm256_and_si256(bytes, low_nibbles);
            w[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low_nibbles);
        }
        const auto bytes_as_floats = [&](int offset) {
            const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sub + offset + 8 * h));
            return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
        };
        const __m256 d = _mm256_mul_ps(load_halves(super_tile + 2304 + 16 * h), bytes_as_floats(256));
        const __m256 m =
            _mm256_xor_ps(_mm256_mul_ps(load_halves(super_tile + 2336 + 16 * h), bytes_as_floats(272)), sign);
        for (int t = 0; t < T; ++t) {
            const int8_t* xq = x.block_q(b0 + t, j);
            __m256i sum16 = _mm256_maddubs_epi16(w[0], broadcast_4_bytes(xq));
            for (int i = 1; i < 8; ++i)
                sum16 = _mm256_add_epi16(sum16, _mm256_maddubs_epi16(w[i], broadcast_4_bytes(xq + 4 * i)));
            const __m256i p = _mm256_madd_epi16(sum16, word_ones);
            const float dx = x.block_scale(b0 + t, j);
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_mul_ps(d, _mm256_set1_ps(dx)), acc[t]);
            acc[t] = _mm256_fmadd_ps(m, _mm256_set1_ps(x.block_scaled_sum(b0 + t, j)), acc[t]);
        }
    }
    for (int t = 0; t < T; ++t) _mm256_storeu_ps(y + (b0 + t) * y_stride + 8 * h, acc[t]);
}

// The same for MXFP4: the codes looked up as their doubled E2M1 values plus kMxfp4Offset (0..24), so the signed
// product subtracts kMxfp4Offset * (sum of the activation block), in halves (dot_in_halves: weights up to 24).
template <int T>
void mxfp4_half(const uint8_t* group_tiles, int64_t blocks, int h, const QuantizedActivations& x, int64_t b0, float* y,
                int64_t y_stride) {
    constexpr int64_t kTileBytes = 272;
    const __m256i low_nibbles = _mm256_set1_epi8(0x0F);
    const __m256i table =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4OffsetDoubled)));
    __m256 acc[T];
    for (auto& a : acc) a = _mm256_setzero_ps();
    for (int64_t j = 0; j < blocks; ++j) {
        const uint8_t* tile = group_tiles + j * kTileBytes;
        __m256i w[8];
        for (int c = 0; c < 4; ++c) {
            const __m256i bytes = load_256(tile + 64 * c + 32 * h);
            w[2 * c] = _mm256_shuffle_epi8(table, _mm256_and_si256(bytes, low_nibbles));
            w[2 * c + 1] = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low_nibbles));
        }
        uint64_t scale_bytes;
        std::memcpy(&scale_bytes, tile + 256 + 8 * h, 8);
        const __m256i e = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<int64_t>(scale_bytes)));
        const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
        const __m256i subnormal = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
        const __m256i is_subnormal = _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e);
        const __m256 d = _mm256_castsi256_ps(_mm256_blendv_epi8(normal, subnormal, is_subnormal));
        for (int t = 0; t < T; ++t) {
            const __m256i p =
                dot_in_halves(w, x.block_q(b0 + t, j), _mm256_set1_epi32(-kMxfp4Offset * x.block_sum(b0 + t, j)));
            const float dx = x.block_scale(b0 + t, j);
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_mul_ps(d, _mm256_set1_ps(dx)), acc[t]);
        }
    }
    for (int t = 0; t < T; ++t) _mm256_storeu_ps(y + (b0 + t) * y_stride + 8 * h, acc[t]);
}

template <int T>
void group_tile(DType type, const uint8_t* tiles, int64_t blocks, const QuantizedActivations& x, int64_t b0, float* y,
                int64_t y_stride) {
    for (int h = 0; h < 2; ++h) {
        if (type == DType::Q4_1)
            q4_1_half<T>(tiles, blocks, h, x, b0, y, y_stride);
        else if (type == DType::Q5_0)
            q5_0_half<T>(tiles, blocks, h, x, b0, y, y_stride);
        else if (type == DType::Q6_K)
            q6_k_half<T>(tiles, blocks, h, x, b0, y, y_stride);
        else if (type == DType::Q4_K)
            q4_k_half<T>(tiles, blocks, h, x, b0, y, y_stride);
        else if (type == DType::MXFP4)
            mxfp4_half<T>(tiles, blocks, h, x, b0, y, y_stride);
        else
            q8_0_half<T>(tiles, blocks, h, x, b0, y, y_stride);
    }
}

}  // namespace

void matmul_packed_groups_avx2(const WeightMatrix& packed, const QuantizedActivations& x, float* y, int64_t group_begin,
                               int64_t group_end) {
    const int64_t blocks = x.blocks_per_row;
    // Bytes per 32-column block (a Q6_K tile spans 8).
    const int64_t block_bytes = packed_tile_bytes(packed.type) * 32 / packed_tile_columns(packed.type);
    for (int64_t g = group_begin; g < group_end; ++g) {
        const uint8_t* tiles = static_cast<const uint8_t*>(packed.data) + g * blocks * block_bytes;
        float* out = y + g * kPackedRows;
        int64_t b = 0;
        for (; b + 4 <= x.batch; b += 4) group_tile<4>(packed.type, tiles, blocks, x, b, out, packed.rows);
        for (; b < x.batch; ++b) group_tile<1>(packed.type, tiles, blocks, x, b, out, packed.rows);
    }
}

}  // namespace tempered
