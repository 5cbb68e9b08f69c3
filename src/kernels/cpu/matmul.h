// Products of a quantized weight matrix with float activations: the bulk of the forward pass.
#pragma once

#include <cstdint>
#include <span>

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "kernels/cpu/dispatch.h"

namespace tempered {

// How a weight matrix's bytes are ordered.
enum class WeightLayout {
    Gguf,      // as in the file: row after row of `type` blocks
    Packed16,  // repacked at load, 16 rows interleaved (packed_weights.h)
};

// A weight matrix: `rows` rows of `cols` elements of `type`.
struct WeightMatrix {
    DType type = DType::F32;
    const void* data = nullptr;
    int64_t rows = 0;  // output features
    int64_t cols = 0;  // input features
    WeightLayout layout = WeightLayout::Gguf;
};

// y (batch, W.rows) = x (batch, W.cols) · W^T, using the fastest kernel this CPU supports
// (active_cpu_isa()). Packed weights (Q4_1, Q5_0, Q8_0) and GGUF-layout Q4_1, Q8_0, Q4_K, Q5_K and Q6_K
// take the integer kernels: x is quantized to 8 bits in blocks of 32 first. Other types dequantize each row and take
// float kernels whose sum order differs from matmul_reference's (see matmul_kernels.h for both definitions). Each
// output element is reduced in the same order whatever `batch` is or however the rows are split across threads (batch
// invariance).
void matmul(const WeightMatrix& weights, const float* x, int64_t batch, float* y, ThreadPool& pool);

// y_i (batch, W_i.rows) = x (batch, cols) · W_i^T for several matrices of the same input width (a
// layer's Q, K and V; gate and up): x is quantized once and the threads split all rows in one pass.
void matmul_many(std::span<const WeightMatrix* const> weights, const float* x, int64_t batch, std::span<float* const> y,
                 ThreadPool& pool);

// The same with the kernels of `isa`, which the CPU must support. For tests and benchmarks.
void matmul_with_isa(const WeightMatrix& weights, const float* x, int64_t batch, float* y, ThreadPool& pool,
                     CpuIsa isa);

// Scalar reference: dequantize each row, float dot product. Slow; the float definition.
void matmul_reference(const WeightMatrix& weights, const float* x, int64_t batch, float* y);

// Scalar reference of the integer path (activations quantized to 8 bits; the types of
// integer_kernel_supports): the definition the AVX2 and AVX-512 kernels match bit for bit.
void matmul_reference_q8(const WeightMatrix& weights, const float* x, int64_t batch, float* y);

}  // namespace tempered
