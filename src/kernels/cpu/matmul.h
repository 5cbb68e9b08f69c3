// Products of a quantized weight matrix with float activations: the bulk of the forward pass.
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "core/thread_pool.h"

namespace tempered {

// A weight matrix as stored in the file: `rows` rows of `cols` elements of `type`, row-major.
struct WeightMatrix {
    DType type = DType::F32;
    const void* data = nullptr;
    int64_t rows = 0;  // output features
    int64_t cols = 0;  // input features
};

// y (batch, W.rows) = x (batch, W.cols) · W^T, using the fastest kernel this CPU supports.
// Each output element is reduced in the same order whatever `batch` is (batch invariance).
void matmul(const WeightMatrix& weights, const float* x, int64_t batch, float* y, ThreadPool& pool);

// Scalar reference: dequantize each row, float dot product. Slow; the definition fast kernels match.
void matmul_reference(const WeightMatrix& weights, const float* x, int64_t batch, float* y);

}  // namespace tempered
