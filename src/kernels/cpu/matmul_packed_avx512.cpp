// AVX-512 VNNI kernel over packed weights (packed_weights.h): each vpdpbusd multiplies 4 weights of 16
// rows by 4 activations broadcast to every lane, so one 512-bit register accumulates the dot products of
// a whole row group. A tile's weights are unpacked once and used for every activation row of a batch
// (whole_batch_groups), or, at batches of 1 to 4, for up to 4 rows (register_tile_group).
//
// At a batch the kernel is bound by the core, not by memory: only ports 0 and 5 run 512-bit arithmetic,
// and vpdpbusd (two a cycle, latency about 5) needs about ten independent chains to keep both busy. So the
// whole-batch loop runs 8 chains at once (two row groups x four activation rows; each broadcast of
// activations feeds both groups) and issues, per block and row, only the 8 vpdpbusd and 3 more
// (convert, scale, fma): the offset correction is each chain's starting value, read from a table.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC 12's AVX-512 headers; see matmul_q8_avx512.cpp
#if !defined(__clang__)                           // a GCC warning; clang has no such group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "kernels/cpu/packed_weights.h"
#include "kernels/cpu/quant_blocks.h"

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

// The E8M0 scale bytes of 16 rows as mxfp4_half_scale's floats: 2^(e - 128) from its bits, (e - 1) << 23, and
// below e = 2 the subnormal 0x00200000 << e.
__m512 mxfp4_half_scales(const uint8_t* bytes) {
    const __m512i e = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes)));
    const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
    const __m512i subnormal = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), e);
    return _mm512_castsi512_ps(
        _mm512_mask_blend_epi32(_mm512_cmplt_epu32_mask(e, _mm512_set1_epi32(2)), normal, subnormal));
}

template <>
struct PackedFormat<DType::MXFP4> {
    static constexpr int64_t kTileBytes = 272;
    // The codes looked up as their doubled E2M1 values plus kMxfp4Offset (0..24, unsigned for vpdpbusd).
    static void unpack(const uint8_t* group_tiles, int64_t j, __m512i w[8], __m512& d, __m512&) {
        const uint8_t* tile = group_tiles + j * kTileBytes;
        const __m512i low_nibbles = _mm512_set1_epi8(0x0F);
        const __m512i table =
            _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4OffsetDoubled)));
        for (int c = 0; c < 4; ++c) {
            const __m512i bytes = _mm512_loadu_si512(tile + 64 * c);
            w[2 * c] = _mm512_shuffle_epi8(table, _mm512_and_si512(bytes, low_nibbles));
            w[2 * c + 1] = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(bytes, 4), low_nibbles));
        }
        d = mxfp4_half_scales(tile + 256);
    }
    // The weights are v + kMxfp4Offset: subtract that times the sum of the activation block for the signed product.
    static __m512 accumulate(__m512i low, __m512i high, __m512 d, __m512, const QuantizedActivations& x, int64_t b,
                             int64_t j, __m512 acc) {
        const __m512i p =
            _mm512_sub_epi32(_mm512_add_epi32(low, high), _mm512_set1_epi32(kMxfp4Offset * x.block_sum(b, j)));
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

// The tiles after block j come next (the group's, then the next group's): fetch them early.
template <DType kType>
void prefetch_ahead(const uint8_t* group_tiles, int64_t j) {
    const uint8_t* ahead = group_tiles + (j + kPrefetchTiles) * kBlockBytes<kType>;
    for (int64_t line = 0; line < kBlockBytes<kType>; line += 64)
        _mm_prefetch(reinterpret_cast<const char*>(ahead + line), _MM_HINT_T0);
}

// Row group `group` against activation rows [b0, b0 + T), the accumulators in registers: each tile is
// unpacked once per T rows. For batches under kWholeBatchMin.
template <DType kType, int T>
void register_tile_group(const uint8_t* group_tiles, int64_t blocks, const QuantizedActivations& x, int64_t b0,
                         float* y, int64_t y_stride) {
    using Format = PackedFormat<kType>;
    __m512 acc[T];
    for (auto& a : acc) a = _mm512_setzero_ps();
    for (int64_t j = 0; j < blocks; ++j) {
        prefetch_ahead<kType>(group_tiles, j);
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

// What the stored weights add to the true quants (Q5_0: 16, Q8_0: 128, Q6_K: 32, MXFP4: 12), and how many
// spans with their own scale a block has (Q6_K: two halves of 16).
template <DType kType>
constexpr int32_t kWeightOffset = kType == DType::Q8_0    ? 128
                                  : kType == DType::Q5_0  ? 16
                                  : kType == DType::Q6_K  ? 32
                                  : kType == DType::MXFP4 ? kMxfp4Offset
                                                          : 0;
template <DType kType>
constexpr int kSpansPerBlock = kType == DType::Q6_K ? 2 : 1;
template <DType kType>
constexpr bool kHasMin = kType == DType::Q4_1 || kType == DType::Q4_K;

// The activations' per-block terms laid out (block, batch row) as the whole-batch loop reads them.
struct BlockTerms {
    std::vector<int32_t> starts;     // (blocks, batch, spans): -offset * the span's sum of quants
    std::vector<float> scales;       // (blocks, batch): the block's dx
    std::vector<float> scaled_sums;  // (blocks, batch)
};

// The sum of quants of `span` (of `spans` equal spans) of an activation block: exact.
int32_t span_sum(const QuantizedActivations& x, int64_t b, int64_t j, int span, int spans) {
    if (spans == 1) return x.block_sum(b, j);
    const int elements = kQ8BlockElements / spans;
    const int8_t* q = x.block_q(b, j) + span * elements;
    int32_t sum = 0;
    for (int e = 0; e < elements; ++e) sum += q[e];
    return sum;
}

// Storage each thread keeps for every type's terms: it only grows.
BlockTerms& thread_block_terms() {
    thread_local BlockTerms terms;
    return terms;
}

// Per call: a few values per block and row, against the 8 vpdpbusd per block, row and group.
template <DType kType>
const BlockTerms& block_terms(const QuantizedActivations& x) {
    constexpr int kSpans = kSpansPerBlock<kType>;
    BlockTerms& terms = thread_block_terms();
    const auto count = static_cast<size_t>(x.batch * x.blocks_per_row);
    if (terms.starts.size() < count * kSpans) terms.starts.resize(count * kSpans);
    if (terms.scales.size() < count) {
        terms.scales.resize(count);
        terms.scaled_sums.resize(count);
    }
    for (int64_t j = 0; j < x.blocks_per_row; ++j) {
        for (int64_t b = 0; b < x.batch; ++b) {
            const auto i = static_cast<size_t>(j * x.batch + b);
            terms.scales[i] = x.block_scale(b, j);
            if constexpr (kHasMin<kType>) terms.scaled_sums[i] = x.block_scaled_sum(b, j);
            if constexpr (kWeightOffset<kType> != 0)
                for (int s = 0; s < kSpans; ++s)
                    terms.starts[i * kSpans + static_cast<size_t>(s)] =
                        -kWeightOffset<kType> * span_sum(x, b, j, s, kSpans);
        }
    }
    return terms;
}

// Activation rows whose accumulators (64 bytes each per row group) stay in L1 beside the tiles and
// activations.
constexpr int64_t kBatchChunk = 64;

// One block of a row group's tile, unpacked (PackedFormat::unpack).
struct UnpackedBlock {
    __m512i w[8];
    __m512 d, m;
};

// For each of G row groups g and activation rows b + r (r < R): acc[g * kBatchChunk + r] + block j's
// term, as PackedFormat::accumulate computes it: the same integer sums (the offset correction is the
// chains' starting value) and float operations. The G * R chains (Q6_K: 2 G R) advance together, to
// hide vpdpbusd's latency, and each activation broadcast feeds G of them. Inlined so that the
// unpacked blocks stay in registers. kFirst (block 0): acc is not read but taken as +0, sparing the
// zeroing of the accumulators.
template <DType kType, int G, int R, bool kFirst>
[[gnu::always_inline]] inline void accumulate_rows(const UnpackedBlock (&blocks)[G], const QuantizedActivations& x,
                                                   const BlockTerms& terms, int64_t j, int64_t b, __m512* acc) {
    constexpr int kSpans = kSpansPerBlock<kType>;
    const auto first = static_cast<size_t>(j * x.batch + b);
    __m512i p[G][R][kSpans];
    for (int r = 0; r < R; ++r)
        for (int s = 0; s < kSpans; ++s) {
            const __m512i start = kWeightOffset<kType> != 0 ? _mm512_set1_epi32(terms.starts[(first + r) * kSpans + s])
                                                            : _mm512_setzero_si512();
            for (int g = 0; g < G; ++g) p[g][r][s] = start;
        }
    const int8_t* xq = x.block_q(b, j);
    for (int k = 0; k < 8; ++k)
        for (int r = 0; r < R; ++r) {
            const __m512i xk = broadcast_4_bytes(xq + r * x.cols + 4 * k);
            for (int g = 0; g < G; ++g) {
                __m512i& chain = p[g][r][k * kSpans / 8];
                chain = _mm512_dpbusd_epi32(chain, blocks[g].w[k], xk);
            }
        }
    for (int g = 0; g < G; ++g)
        for (int r = 0; r < R; ++r) {
            const __m512 dx = _mm512_set1_ps(terms.scales[first + r]);
            const UnpackedBlock& block = blocks[g];
            __m512& a = acc[g * kBatchChunk + r];
            const __m512 prior = kFirst ? _mm512_setzero_ps() : a;
            a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p[g][r][0]), _mm512_mul_ps(block.d, dx), prior);
            if constexpr (kSpans == 2)
                a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p[g][r][1]), _mm512_mul_ps(block.m, dx), a);
            if constexpr (kHasMin<kType>) a = _mm512_fmadd_ps(block.m, _mm512_set1_ps(terms.scaled_sums[first + r]), a);
        }
}

// Row groups taken together, and activation rows whose chains advance together: 8 chains (Q6_K: 16)
// beside 16 registers of unpacked weights. Measured on Sapphire Rapids at batch 32, against one group
// of 8 rows: 20% (Q6_K 10%) fewer cycles; 2 groups of 6 or 8 rows spill.
constexpr int kGroupsTogether = 2;
constexpr int kRowsTogether = 4;

// The smallest batch for whole_batch_groups: below, register_tile_group's accumulators in registers
// win for the 4-bit and 8-bit types (measured at batches 2 and 4); Q6_K's unpacking, the costliest,
// pays from batch 2.
template <DType kType>
constexpr int64_t kWholeBatchMin = kType == DType::Q6_K ? 2 : 5;

// Block j of row groups [g, g + G) (their tiles one after another from group_tiles) against
// activation rows [b0, b0 + rows): the block is unpacked once for all of them.
template <DType kType, int G, bool kFirst>
void accumulate_block(const uint8_t* group_tiles, int64_t blocks, const QuantizedActivations& x,
                      const BlockTerms& terms, int64_t j, int64_t b0, int64_t rows, __m512* acc) {
    constexpr int R = kRowsTogether;
    const int64_t group_bytes = blocks * kBlockBytes<kType>;
    UnpackedBlock unpacked[G];
    for (int g = 0; g < G; ++g) {
        prefetch_ahead<kType>(group_tiles + g * group_bytes, j);
        PackedFormat<kType>::unpack(group_tiles + g * group_bytes, j, unpacked[g].w, unpacked[g].d, unpacked[g].m);
    }
    int64_t t = 0;
    for (; t + R <= rows; t += R) accumulate_rows<kType, G, R, kFirst>(unpacked, x, terms, j, b0 + t, acc + t);
    if (t + 2 <= rows) {
        accumulate_rows<kType, G, 2, kFirst>(unpacked, x, terms, j, b0 + t, acc + t);
        t += 2;
    }
    if (t < rows) accumulate_rows<kType, G, 1, kFirst>(unpacked, x, terms, j, b0 + t, acc + t);
}

// Row groups [g, g + G) against activation rows [b0, b0 + rows), rows <= kBatchChunk, block after
// block; the accumulators live in memory (L1), costing loads and stores rather than the 512-bit
// arithmetic the kernel is bound by.
template <DType kType, int G>
void whole_batch_groups(const uint8_t* group_tiles, int64_t blocks, const QuantizedActivations& x,
                        const BlockTerms& terms, int64_t b0, int64_t rows, float* y, int64_t y_stride) {
    __m512 acc[G * kBatchChunk];
    accumulate_block<kType, G, true>(group_tiles, blocks, x, terms, 0, b0, rows, acc);
    for (int64_t j = 1; j < blocks; ++j)
        accumulate_block<kType, G, false>(group_tiles, blocks, x, terms, j, b0, rows, acc);
    for (int g = 0; g < G; ++g)
        for (int64_t t = 0; t < rows; ++t)
            _mm512_storeu_ps(y + (b0 + t) * y_stride + g * kPackedRows, acc[g * kBatchChunk + t]);
}

template <DType kType>
void groups(const WeightMatrix& packed, const QuantizedActivations& x, float* y, int64_t group_begin,
            int64_t group_end) {
    const int64_t blocks = x.blocks_per_row;
    const auto* data = static_cast<const uint8_t*>(packed.data);
    if (x.batch >= kWholeBatchMin<kType>) {
        const BlockTerms& terms = block_terms<kType>(x);
        // Equal chunks of at most kBatchChunk rows.
        const int64_t chunks = (x.batch + kBatchChunk - 1) / kBatchChunk;
        const int64_t chunk_rows = (x.batch + chunks - 1) / chunks;
        constexpr int G = kGroupsTogether;
        for (int64_t g = group_begin; g < group_end;) {
            const uint8_t* tiles = data + g * blocks * kBlockBytes<kType>;
            const bool together = g + G <= group_end;
            for (int64_t b = 0; b < x.batch; b += chunk_rows) {
                const int64_t rows = std::min(chunk_rows, x.batch - b);
                float* out = y + g * kPackedRows;
                if (together)
                    whole_batch_groups<kType, G>(tiles, blocks, x, terms, b, rows, out, packed.rows);
                else
                    whole_batch_groups<kType, 1>(tiles, blocks, x, terms, b, rows, out, packed.rows);
            }
            g += together ? G : 1;
        }
        return;
    }
    for (int64_t g = group_begin; g < group_end; ++g) {
        const uint8_t* tiles = data + g * blocks * kBlockBytes<kType>;
        float* out = y + g * kPackedRows;
        int64_t b = 0;
        if (b + 4 <= x.batch) {
            register_tile_group<kType, 4>(tiles, blocks, x, b, out, packed.rows);
            b += 4;
        }
        if (b + 2 <= x.batch) {
            register_tile_group<kType, 2>(tiles, blocks, x, b, out, packed.rows);
            b += 2;
        }
        if (b < x.batch) register_tile_group<kType, 1>(tiles, blocks, x, b, out, packed.rows);
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
    else if (packed.type == DType::MXFP4)
        groups<DType::MXFP4>(packed, x, y, group_begin, group_end);
    else
        groups<DType::Q8_0>(packed, x, y, group_begin, group_end);
}

}  // namespace tempered
