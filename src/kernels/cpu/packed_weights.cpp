// Packing into the 16-row layout, element access, and the scalar kernel: the plain statement of the
// layout and arithmetic described in packed_weights.h.
#include "kernels/cpu/packed_weights.h"

#include <cmath>
#include <cstring>

#include "core/half.h"
#include "kernels/cpu/quant_blocks.h"

namespace tempered {
namespace {

constexpr int64_t kQ4_1TileBytes = 320;
constexpr int64_t kQ8_0TileBytes = 544;
constexpr int64_t kQ5_0TileBytes = 352;
constexpr int64_t kMxfp4TileBytes = 272, kMxfp4ScalesOffset = 256;
constexpr int64_t kQ4_1ScalesOffset = 256, kQ4_1MinsOffset = 288, kQ8_0ScalesOffset = 512;
constexpr int64_t kQ5_0HighBitsOffset = 256, kQ5_0ScalesOffset = 320;
constexpr int64_t kQ6_KTileBytes = 3360, kQ6_KSubTileBytes = 416;
constexpr int64_t kQ6_KHighBitsOffset = 256, kQ6_KSubScalesOffset = 384, kQ6_KScalesOffset = 3328;

constexpr int64_t kQ4_KTileBytes = 2368, kQ4_KSubTileBytes = 288;
constexpr int64_t kQ4_KSubScalesOffset = 256, kQ4_KSubMinsOffset = 272, kQ4_KScalesOffset = 2304,
                  kQ4_KMinScalesOffset = 2336;

bool is_k_quant(DType type) { return type == DType::Q6_K || type == DType::Q4_K; }

int64_t tiles_per_row(const WeightMatrix& matrix) { return matrix.cols / packed_tile_columns(matrix.type); }

uint8_t* tile_at(const WeightMatrix& matrix, uint8_t* base, int64_t group, int64_t tile) {
    return base + (group * tiles_per_row(matrix) + tile) * packed_tile_bytes(matrix.type);
}

const uint8_t* tile_at(const WeightMatrix& packed, int64_t group, int64_t tile) {
    return static_cast<const uint8_t*>(packed.data) +
           (group * tiles_per_row(packed) + tile) * packed_tile_bytes(packed.type);
}

uint16_t half_at(const uint8_t* p, int64_t index) {
    uint16_t value;
    std::memcpy(&value, p + 2 * index, 2);
    return value;
}

// Row r's 32 four-bit values of a block (element j in the low nibble of qs[j], j + 16 in the high one) placed
// as the layout's nibbles: byte 64c + 4r + k holds element 8c + k low and 8c + 4 + k high.
void place_nibbles(const uint8_t qs[16], int r, uint8_t* tile) {
    int q[32];
    for (int i = 0; i < 16; ++i) {
        q[i] = qs[i] & 0x0F;
        q[i + 16] = qs[i] >> 4;
    }
    for (int c = 0; c < 4; ++c)
        for (int k = 0; k < 4; ++k)
            tile[64 * c + 4 * r + k] = static_cast<uint8_t>(q[8 * c + k] | q[8 * c + 4 + k] << 4);
}

void pack_q4_1_tile(const BlockQ4_1* const rows[kPackedRows], int64_t block, uint8_t* tile) {
    for (int r = 0; r < kPackedRows; ++r) {
        const BlockQ4_1& b = rows[r][block];
        place_nibbles(b.qs, r, tile);
        std::memcpy(tile + kQ4_1ScalesOffset + 2 * r, &b.d, 2);
        std::memcpy(tile + kQ4_1MinsOffset + 2 * r, &b.m, 2);
    }
}

// The E2M1 codes placed as Q4_1's nibbles, then the 16 rows' E8M0 scale bytes: exactly the file's bytes.
void pack_mxfp4_tile(const BlockMXFP4* const rows[kPackedRows], int64_t block, uint8_t* tile) {
    for (int r = 0; r < kPackedRows; ++r) {
        const BlockMXFP4& b = rows[r][block];
        place_nibbles(b.qs, r, tile);
        tile[kMxfp4ScalesOffset + r] = b.e;
    }
}

void pack_q8_0_tile(const BlockQ8_0* const rows[kPackedRows], int64_t block, uint8_t* tile) {
    for (int r = 0; r < kPackedRows; ++r) {
        const BlockQ8_0& b = rows[r][block];
        for (int c = 0; c < 8; ++c)
            for (int k = 0; k < 4; ++k) tile[64 * c + 4 * r + k] = static_cast<uint8_t>(b.qs[4 * c + k] + 128);
        std::memcpy(tile + kQ8_0ScalesOffset + 2 * r, &b.d, 2);
    }
}

// The same nibbles as Q4_1 for the low 4 bits of q; the fifth bits as one 64-bit mask per unpacked
// register, so that a kernel applies them with one masked add.
void pack_q5_0_tile(const BlockQ5_0* const rows[kPackedRows], int64_t block, uint8_t* tile) {
    uint64_t high_bits[8] = {};
    for (int r = 0; r < kPackedRows; ++r) {
        const BlockQ5_0& b = rows[r][block];
        uint32_t qh;
        std::memcpy(&qh, b.qh, 4);
        int q[32];
        for (int i = 0; i < 16; ++i) {
            q[i] = (b.qs[i] & 0x0F) | static_cast<int>(((qh >> i) & 1) << 4);
            q[i + 16] = (b.qs[i] >> 4) | static_cast<int>(((qh >> (i + 16)) & 1) << 4);
        }
        for (int c = 0; c < 4; ++c)
            for (int k = 0; k < 4; ++k)
                tile[64 * c + 4 * r + k] = static_cast<uint8_t>((q[8 * c + k] & 0x0F) | (q[8 * c + 4 + k] & 0x0F) << 4);
        for (int i = 0; i < 8; ++i)
            for (int k = 0; k < 4; ++k)
                if (q[4 * i + k] & 0x10) high_bits[i] |= uint64_t{1} << (4 * r + k);
        std::memcpy(tile + kQ5_0ScalesOffset + 2 * r, &b.d, 2);
    }
    std::memcpy(tile + kQ5_0HighBitsOffset, high_bits, sizeof high_bits);  // x86: little-endian
}

// The 6-bit quants q (0..63, w = d * sc * (q - 32)) of element e of a Q6_K super-block, as in
// dequantize_q6_k.
int q6_k_quant(const BlockQ6_K& b, int e) {
    const int half = e / 128, within = e % 128;
    const int low = (b.ql[64 * half + within % 64] >> (4 * (within / 64))) & 0x0F;
    const int high = (b.qh[32 * half + within % 32] >> (2 * (within / 32))) & 0x03;
    return low | high << 4;
}

// Sub-tile s (columns 32s .. 32s+31) as a Q5_0 tile with two bit masks per register (bits 4 and 5),
// then the two 16-element scales of each row; the rows' d once after the eight sub-tiles.
void pack_q6_k_tile(const BlockQ6_K* const rows[kPackedRows], int64_t block, uint8_t* tile) {
    for (int s = 0; s < 8; ++s) {
        uint8_t* sub = tile + s * kQ6_KSubTileBytes;
        uint64_t high_bits[8][2] = {};
        for (int r = 0; r < kPackedRows; ++r) {
            const BlockQ6_K& b = rows[r][block];
            int q[32];
            for (int i = 0; i < 32; ++i) q[i] = q6_k_quant(b, 32 * s + i);
            for (int c = 0; c < 4; ++c)
                for (int k = 0; k < 4; ++k)
                    sub[64 * c + 4 * r + k] =
                        static_cast<uint8_t>((q[8 * c + k] & 0x0F) | (q[8 * c + 4 + k] & 0x0F) << 4);
            for (int i = 0; i < 8; ++i)
                for (int k = 0; k < 4; ++k)
                    for (int bit = 0; bit < 2; ++bit)
                        if (q[4 * i + k] & (0x10 << bit)) high_bits[i][bit] |= uint64_t{1} << (4 * r + k);
            sub[kQ6_KSubScalesOffset + r] = static_cast<uint8_t>(b.scales[2 * s]);
            sub[kQ6_KSubScalesOffset + kPackedRows + r] = static_cast<uint8_t>(b.scales[2 * s + 1]);
            std::memcpy(tile + kQ6_KScalesOffset + 2 * r, &b.d, 2);
        }
        std::memcpy(sub + kQ6_KHighBitsOffset, high_bits, sizeof high_bits);  // x86: little-endian
    }
}

// Sub-tile s (columns 32s .. 32s+31) as a Q4_1 tile's nibbles, then the 16 rows' six-bit scales and
// mins of the sub-block, decoded to a byte each; the rows' d and dmin once after the eight sub-tiles.
void pack_q4_k_tile(const BlockQ4_K* const rows[kPackedRows], int64_t block, uint8_t* tile) {
    for (int s = 0; s < 8; ++s) {
        uint8_t* sub = tile + s * kQ4_KSubTileBytes;
        for (int r = 0; r < kPackedRows; ++r) {
            const BlockQ4_K& b = rows[r][block];
            const uint8_t* qs = b.qs + 32 * (s / 2);
            int q[32];
            for (int i = 0; i < 32; ++i) q[i] = (qs[i] >> (4 * (s % 2))) & 0x0F;
            for (int c = 0; c < 4; ++c)
                for (int k = 0; k < 4; ++k)
                    sub[64 * c + 4 * r + k] = static_cast<uint8_t>(q[8 * c + k] | q[8 * c + 4 + k] << 4);
            k_quant_scale_min(b.scales, s, sub[kQ4_KSubScalesOffset + r], sub[kQ4_KSubMinsOffset + r]);
            std::memcpy(tile + kQ4_KScalesOffset + 2 * r, &b.d, 2);
            std::memcpy(tile + kQ4_KMinScalesOffset + 2 * r, &b.dmin, 2);
        }
    }
}

}  // namespace

int64_t packed_tile_columns(DType type) { return is_k_quant(type) ? kSuperBlockElements : kQ8BlockElements; }

bool packing_supports(const WeightMatrix& matrix) {
    return matrix.layout == WeightLayout::Gguf &&
           (matrix.type == DType::Q4_1 || matrix.type == DType::Q8_0 || matrix.type == DType::Q5_0 ||
            matrix.type == DType::Q6_K || matrix.type == DType::Q4_K || matrix.type == DType::MXFP4) &&
           matrix.rows > 0 && matrix.rows % kPackedRows == 0 && matrix.cols > 0 &&
           matrix.cols % packed_tile_columns(matrix.type) == 0;
}

int64_t packed_tile_bytes(DType type) {
    switch (type) {
        case DType::Q4_1: return kQ4_1TileBytes;
        case DType::Q5_0: return kQ5_0TileBytes;
        case DType::Q6_K: return kQ6_KTileBytes;
        case DType::Q4_K: return kQ4_KTileBytes;
        case DType::MXFP4: return kMxfp4TileBytes;
        default: return kQ8_0TileBytes;
    }
}

int64_t packed_bytes(const WeightMatrix& matrix) {
    return matrix.rows / kPackedRows * tiles_per_row(matrix) * packed_tile_bytes(matrix.type);
}

WeightMatrix pack_weights(const WeightMatrix& matrix, void* out) {
    const auto* data = static_cast<const uint8_t*>(matrix.data);
    const auto row_bytes = static_cast<int64_t>(*dtype_row_bytes(matrix.type, static_cast<uint64_t>(matrix.cols)));
    for (int64_t g = 0; g < matrix.rows / kPackedRows; ++g) {
        const uint8_t* rows[kPackedRows];
        for (int r = 0; r < kPackedRows; ++r) rows[r] = data + (g * kPackedRows + r) * row_bytes;
        for (int64_t j = 0; j < tiles_per_row(matrix); ++j) {
            uint8_t* tile = tile_at(matrix, static_cast<uint8_t*>(out), g, j);
            if (matrix.type == DType::Q4_1)
                pack_q4_1_tile(reinterpret_cast<const BlockQ4_1* const*>(rows), j, tile);
            else if (matrix.type == DType::Q5_0)
                pack_q5_0_tile(reinterpret_cast<const BlockQ5_0* const*>(rows), j, tile);
            else if (matrix.type == DType::Q6_K)
                pack_q6_k_tile(reinterpret_cast<const BlockQ6_K* const*>(rows), j, tile);
            else if (matrix.type == DType::Q4_K)
                pack_q4_k_tile(reinterpret_cast<const BlockQ4_K* const*>(rows), j, tile);
            else if (matrix.type == DType::MXFP4)
                pack_mxfp4_tile(reinterpret_cast<const BlockMXFP4* const*>(rows), j, tile);
            else
                pack_q8_0_tile(reinterpret_cast<const BlockQ8_0* const*>(rows), j, tile);
        }
    }
    WeightMatrix packed = matrix;
    packed.data = out;
    packed.layout = WeightLayout::Packed16;
    return packed;
}

namespace {

PackedWeight packed_q6_k_weight(const WeightMatrix& packed, int64_t row, int64_t col) {
    const uint8_t* tile = tile_at(packed, row / kPackedRows, col / kSuperBlockElements);
    const int r = static_cast<int>(row % kPackedRows), s = static_cast<int>(col % kSuperBlockElements / 32);
    const int e = static_cast<int>(col % kQ8BlockElements);
    const uint8_t* sub = tile + s * kQ6_KSubTileBytes;
    const uint8_t byte = sub[64 * (e / 8) + 4 * r + e % 4];
    uint64_t high_bits[2];
    std::memcpy(high_bits, sub + kQ6_KHighBitsOffset + 16 * (e / 4), 16);
    const int low = (e % 8) < 4 ? byte & 0x0F : byte >> 4;
    int high = 0;
    for (int bit = 0; bit < 2; ++bit) high |= static_cast<int>((high_bits[bit] >> (4 * r + e % 4)) & 1) << bit;
    const auto scale = static_cast<int8_t>(sub[kQ6_KSubScalesOffset + kPackedRows * (e / 16) + r]);
    return {(low | high << 4) - 32, half_to_float(half_at(tile + kQ6_KScalesOffset, r)) * static_cast<float>(scale),
            0.0f};
}

PackedWeight packed_q4_k_weight(const WeightMatrix& packed, int64_t row, int64_t col) {
    const uint8_t* tile = tile_at(packed, row / kPackedRows, col / kSuperBlockElements);
    const int r = static_cast<int>(row % kPackedRows), s = static_cast<int>(col % kSuperBlockElements / 32);
    const int e = static_cast<int>(col % kQ8BlockElements);
    const uint8_t* sub = tile + s * kQ4_KSubTileBytes;
    const uint8_t byte = sub[64 * (e / 8) + 4 * r + e % 4];
    const float d = half_to_float(half_at(tile + kQ4_KScalesOffset, r));
    const float dmin = half_to_float(half_at(tile + kQ4_KMinScalesOffset, r));
    return {(e % 8) < 4 ? byte & 0x0F : byte >> 4, d * static_cast<float>(sub[kQ4_KSubScalesOffset + r]),
            -(dmin * static_cast<float>(sub[kQ4_KSubMinsOffset + r]))};
}

}  // namespace

PackedWeight packed_weight(const WeightMatrix& packed, int64_t row, int64_t col) {
    if (packed.type == DType::Q6_K) return packed_q6_k_weight(packed, row, col);
    if (packed.type == DType::Q4_K) return packed_q4_k_weight(packed, row, col);
    const uint8_t* tile = tile_at(packed, row / kPackedRows, col / kQ8BlockElements);
    const int r = static_cast<int>(row % kPackedRows), e = static_cast<int>(col % kQ8BlockElements);
    if (packed.type == DType::Q4_1) {
        const uint8_t byte = tile[64 * (e / 8) + 4 * r + e % 4];
        return {(e % 8) < 4 ? byte & 0x0F : byte >> 4, half_to_float(half_at(tile + kQ4_1ScalesOffset, r)),
                half_to_float(half_at(tile + kQ4_1MinsOffset, r))};
    }
    if (packed.type == DType::MXFP4) {
        const uint8_t byte = tile[64 * (e / 8) + 4 * r + e % 4];
        return {kMxfp4Doubled[(e % 8) < 4 ? byte & 0x0F : byte >> 4], mxfp4_half_scale(tile[kMxfp4ScalesOffset + r]),
                0.0f};
    }
    if (packed.type == DType::Q5_0) {
        const uint8_t byte = tile[64 * (e / 8) + 4 * r + e % 4];
        uint64_t high_bits;
        std::memcpy(&high_bits, tile + kQ5_0HighBitsOffset + 8 * (e / 4), 8);
        const int low = (e % 8) < 4 ? byte & 0x0F : byte >> 4;
        const int high = static_cast<int>((high_bits >> (4 * r + e % 4)) & 1);
        return {(low | high << 4) - 16, half_to_float(half_at(tile + kQ5_0ScalesOffset, r)), 0.0f};
    }
    return {tile[64 * (e / 4) + 4 * r + e % 4] - 128, half_to_float(half_at(tile + kQ8_0ScalesOffset, r)), 0.0f};
}

void matmul_packed_groups_scalar(const WeightMatrix& packed, const QuantizedActivations& x, float* y,
                                 int64_t group_begin, int64_t group_end) {
    const bool has_min = packed.type == DType::Q4_1 || packed.type == DType::Q4_K;
    // Elements sharing one scale: Q6_K has two per block, one per 16 elements.
    const int scale_span = packed.type == DType::Q6_K ? 16 : kQ8BlockElements;
    for (int64_t row = group_begin * kPackedRows; row < group_end * kPackedRows; ++row) {
        for (int64_t b = 0; b < x.batch; ++b) {
            float acc = 0.0f;
            for (int64_t j = 0; j < x.blocks_per_row; ++j) {
                const int8_t* xq = x.block_q(b, j);
                for (int first = 0; first < kQ8BlockElements; first += scale_span) {
                    int32_t p = 0;
                    for (int i = first; i < first + scale_span; ++i)
                        p += packed_weight(packed, row, j * kQ8BlockElements + i).q * xq[i];
                    const PackedWeight scales = packed_weight(packed, row, j * kQ8BlockElements + first);
                    acc = std::fma(static_cast<float>(p), scales.d * x.block_scale(b, j), acc);
                }
                if (has_min)
                    acc = std::fma(packed_weight(packed, row, j * kQ8BlockElements).m, x.block_scaled_sum(b, j), acc);
            }
            y[b * packed.rows + row] = acc;
        }
    }
}

}  // namespace tempered
