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
//   Q8_0 (544 bytes): [0, 512) quants + 128 as unsigned bytes: byte 64c + 4r + k holds element
//        4c + k of row r (c < 8); [512, 544) the 16 rows' d as halves.
// Either way, "unpacked register i" (i < 8) holds elements 4i .. 4i+3 of every row of the group.
//
// The kernels' canonical arithmetic for row r and activation row b (definitions in
// quantize_activations.h), the same in the scalar, AVX2 and AVX-512 kernels, bit for bit:
//   acc = 0
//   for each block j:  p = sum of q_w * q_x over the block   (exact int32; Q8_0: signed q_w;
//                                                             Q5_0: q_w = q - 16)
//                      acc = fma(float(p), d * dx, acc)
//                      Q4_1: acc = fma(m, scaled_sum_x, acc)
//   y[b, r] = acc
// It is the arithmetic of llama.cpp's Q4_1 x Q8_1, Q5_0 x Q8_0 and Q8_0 x Q8_0 dot products, with
// float scales.
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/quantize_activations.h"

namespace tempered {

inline constexpr int64_t kPackedRows = 16;

// Whether `matrix` (in GGUF layout) can be packed: Q4_1, Q5_0 or Q8_0 with rows a multiple of 16.
bool packing_supports(const WeightMatrix& matrix);

// Bytes of one tile (16 rows x 32 columns) of `type` in the packed layout.
int64_t packed_tile_bytes(DType type);

// Bytes of the whole packed matrix: the same as in the file.
int64_t packed_bytes(const WeightMatrix& matrix);

// Writes `matrix` (GGUF layout; packing_supports must hold) into `out` (packed_bytes) and returns the
// view of it: the same type and shape with layout Packed16.
WeightMatrix pack_weights(const WeightMatrix& matrix, void* out);

// Element (row, col) of a packed matrix as a quant, with its block's scale d and min m (m = 0 for
// Q8_0 and Q5_0; Q5_0's q is the file's q - 16): w = d * q + m. For tests and the scalar kernel.
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
