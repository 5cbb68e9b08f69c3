// The integer kernels behind matmul(), one per instruction set, and the canonical order they share.
//
// For weight types with an integer kernel (integer_kernel_supports: Q4_1, Q8_0, Q4_K, Q5_K, Q6_K),
// activations are first quantized (quantize_activations.h). Each 32-weight block j of a row is read as
// w[i] = lane_scale[i / 4] * q[i] + min, with integer quants q, and y[b, r] is defined as follows. The
// scalar, AVX2 and AVX-512 kernels all compute exactly this, operation for operation, so they agree
// bit for bit:
//
//   acc[0..8) = 0
//   for each block j:                                      (dx: the activation block's scale)
//     p[l] = sum of q * x_q over elements 4l .. 4l+3         (exact int32)
//     acc[l] = fma(float(p[l]), lane_scale[l] * dx, acc[l])
//     types with a min: acc[l] = fma(lane_sums[l], min * dx, acc[l])
//   y = ((acc0 + acc4) + (acc2 + acc6)) + ((acc1 + acc5) + (acc3 + acc7))
//
// Per type: Q4_1 lane_scale = d, min = m. Q8_0 lane_scale = d. Q4_K / Q5_K: j is sub-block j % 8 of
// super-block j / 8, lane_scale = d * sc, min = -(dmin * m). Q6_K: q is offset by -32, lane_scale =
// d * scales[16-element group].
//
// Each output element depends only on its own weight row and activation row, never on the batch size,
// the tiling, or the split across threads: the kernels are batch invariant by construction.
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/quantize_activations.h"

namespace tempered {

bool integer_kernel_supports(DType type);

// y (x.batch, weights.rows): fills the columns [row_begin, row_end) of every batch row.
void matmul_q8_rows_scalar(const WeightMatrix& weights, const QuantizedActivations& x, float* y, int64_t row_begin,
                           int64_t row_end);
void matmul_q8_rows_avx2(const WeightMatrix& weights, const QuantizedActivations& x, float* y, int64_t row_begin,
                         int64_t row_end);
void matmul_q8_rows_avx512(const WeightMatrix& weights, const QuantizedActivations& x, float* y, int64_t row_begin,
                           int64_t row_end);

// Float kernels for every other type the dequantizer knows: each weight row is dequantized
// (dequantize_row, or an exact vector conversion for F16 / BF16), then
//   acc[0..8) = 0;  for each i: acc[i % 8] = fma(w[i], x[i], acc[i % 8]);  y = the same sum of lanes.
// Scalar twin and AVX2 kernel agree bit for bit; both are batch invariant.
void matmul_float_rows_scalar(const WeightMatrix& weights, const float* x, int64_t batch, float* y, int64_t row_begin,
                              int64_t row_end);
void matmul_float_rows_avx2(const WeightMatrix& weights, const float* x, int64_t batch, float* y, int64_t row_begin,
                            int64_t row_end);

}  // namespace tempered
