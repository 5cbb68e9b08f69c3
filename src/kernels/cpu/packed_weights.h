// Weights repacked at load time into the layout the integer kernels read fastest ("packed" layout).
//
// A GGUF file stores a matrix row by row. The packed layout interleaves groups of 16 rows so that one
// 512-bit register holds 4 consecutive weights of each of the 16 rows: a single vpdpbusd then adds 64
// products into 16 per-row sums, and each weight block is unpacked once for every activation row of a
// batch. The scales go beside the quants of the same block. Bytes per matrix are those of the file.
//
// Tile (row group g, block j) of 32 columns, at (g * blocks_per_row + j) * tile_bytes:
//   Q4_1 (320 bytes): [0, 256) quants: byte 64c + 4r + k holds element 8c + k of row r in its low
//        nibble and element 8c + 4 + k in its high nibble (c < 4, r < 16, k < 4);
//        [256, 288) the 16 rows' d as halves; [288, 320) the 16 rows' m as halves.
//   Q5_0 (352 bytes): [0, 256) the low 4 bits of the quants q (0..31), nibbles placed as in Q4_1;
//        [256, 320) the fifth bits: 64-bit little-endian mask i (i < 8) at 256 + 8i has bit 4r + k set
//        when element 4i + k of row r has q >= 16; [320, 352) the 16 rows' d as halves. w = d * (q - 16).
//   MXFP4 (272 bytes): [0, 256) the E2M1 codes (0..15) placed as Q4_1's nibbles; [256, 272) the 16 rows'
//        E8M0 scale bytes. w = kMxfp4Doubled[code] * mxfp4_half_scale(e) (quant_blocks.h): q is the doubled
//        E2M1 value (-12..12), d the halved power of two. Exactly the file's bytes.
//   Q8_0 (544 bytes): [0, 512) quants + 128 as unsigned bytes: byte 64c + 4r + k holds element
//        4c + k of row r (c < 8); [512, 544) the 16 rows' d as halves.
//   Q6_K (3360 bytes, a tile of 16 rows x 256 columns, one file super-block per row): eight 416-byte
//        sub-tiles, sub-tile s for columns 32s .. 32s+31: [0, 256) the low 4 bits of the quants q
//        (0..63) placed as in Q4_1; [256, 384) per register i two 64-bit masks, at 256 + 16i bit 4 and
//        at 264 + 16i bit 5 of q, bit 4r + k for element 4i + k of row r; [384, 400) the 16 rows' int8
//        scales of the sub-tile's first 16 columns, [400, 416) those of its last 16. Then at [3328,
//        3360) the 16 rows' d as halves. w = d * scale * (q - 32); exactly the file's bytes.
//   Q4_K (2368 bytes, 16 rows x 256 columns): eight 288-byte sub-tiles, sub-tile s for columns
//        32s .. 32s+31: [0, 256) the quants q (0..15) placed as in Q4_1; [256, 272) the 16 rows'
//        scales sc, [272, 288) their mins mn, decoded from the file's six bits to a byte each. Then
//        [2304, 2336) the rows' d and [2336, 2368) their dmin as halves. w = d * sc * q - dmin * mn.
//        64 bytes more than the file's 2304: the decoded scales save every use the six-bit unpacking.
// In every layout, "unpacked register i" (i < 8) holds elements 4i .. 4i+3 of every row of the group.
//
// The kernels' canonical arithmetic for row r and activation row b (definitions in
// quantize_activations.h), the same in the scalar, AVX2 and AVX-512 kernels, bit for bit:
//   acc = 0
//   for each block j:  p = sum of q_w * q_x over the block   (exact int32; Q8_0: signed q_w;
//                                                             Q5_0: q_w = q - 16;
//                                                             MXFP4: q_w the doubled E2M1 value)
//                      acc = fma(float(p), d * dx, acc)
//                      Q4_1, Q4_K: acc = fma(m, scaled_sum_x, acc)
// (Q4_K per block: d is the row's d * sc and m = -(dmin * mn), both one float rounding.)
//   y[b, r] = acc
// Q6_K instead, per block j: for each half h of 16 elements, p_h = sum of (q - 32) * q_x over the
// half (exact int32) and acc = fma(float(p_h), (d * scale_h) * dx, acc), h = 0 then 1.
// It is the arithmetic of llama.cpp's Q4_1 x Q8_1, Q5_0 x Q8_0, Q8_0 x Q8_0, MXFP4 x Q8_0, Q4_K x Q8_K and
// Q6_K x Q8_K dot products (the latter's integer sums per 16 elements), with float scales.
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/quantize_activations.h"

namespace tempered {

inline constexpr int64_t kPackedRows = 16;

// Whether `matrix` (in GGUF layout) can be packed: Q4_1, Q5_0, Q8_0, Q4_K, Q6_K or MXFP4, with rows a
// multiple of 16 and whole tiles of columns.
bool packing_supports(const WeightMatrix& matrix);

// Columns of one tile of `type`: 32, or 256 for the K-quants.
int64_t packed_tile_columns(DType type);

// Bytes of one tile (16 rows x packed_tile_columns) of `type` in the packed layout.
int64_t packed_tile_bytes(DType type);

// Bytes of the whole packed matrix: the same as in the file (Q4_K: 64 more per tile).
int64_t packed_bytes(const WeightMatrix& matrix);

// Writes `matrix` (GGUF layout; packing_supports must hold) into `out` (packed_bytes) and returns the
// view of it: the same type and shape with layout Packed16.
WeightMatrix pack_weights(const WeightMatrix& matrix, void* out);

// Element (row, col) of a packed matrix as a quant, with its block's scale d and min m: w = d * q + m.
// m = 0 for Q8_0, Q5_0, Q6_K and MXFP4 (q the doubled E2M1 value, d the halved scale). Q5_0's q is the file's q - 16;
// Q6_K's is q - 32, its d the row's d times the scale of the element's 16 columns; Q4_K's d = d * sc, m = -(dmin * mn).
// For tests and the scalar kernel.
struct PackedWeight {
    int q;
    float d;
    float m;
};
PackedWeight packed_weight(const WeightMatrix& packed, int64_t row, int64_t col);

// y (x.batch, rows): the columns of row groups [group_begin, group_end) of every batch row.
void matmul_packed_groups_scalar(const WeightMatrix& packed, const QuantizedActivations& x, float* y,
                                 int64_t group_begin, int64_t group_end);
void matmul_packed_groups_avx2(const WeightMatrix& packed, const QuantizedActivations& x, float* y, int64_t group_begin,
                               int64_t group_end);
void matmul_packed_groups_avx512(const WeightMatrix& packed, const QuantizedActivations& x, float* y,
                                 int64_t group_begin, int64_t group_end);

}  // namespace tempered
