#include "kernels/cpu/matmul.h"

#include <vector>

#include "kernels/cpu/dequantize.h"

namespace tempered {
namespace {

size_t row_stride_bytes(const WeightMatrix& weights) {
    const auto& traits = dtype_traits(weights.type);
    return static_cast<size_t>(weights.cols / traits.block_elements) * traits.block_bytes;
}

void matmul_rows_reference(const WeightMatrix& weights, const float* x, int64_t batch, float* y,
                           int64_t row_begin, int64_t row_end) {
    std::vector<float> row(static_cast<size_t>(weights.cols));
    const size_t stride = row_stride_bytes(weights);
    for (int64_t r = row_begin; r < row_end; ++r) {
        dequantize_row(weights.type, static_cast<const uint8_t*>(weights.data) + r * stride, row.data(),
                       weights.cols);
        for (int64_t b = 0; b < batch; ++b) {
            const float* xb = x + b * weights.cols;
            float sum = 0.0f;
            for (int64_t i = 0; i < weights.cols; ++i) sum += row[i] * xb[i];
            y[b * weights.rows + r] = sum;
        }
    }
}

}  // namespace

void matmul_reference(const WeightMatrix& weights, const float* x, int64_t batch, float* y) {
    matmul_rows_reference(weights, x, batch, y, 0, weights.rows);
}

void matmul(const WeightMatrix& weights, const float* x, int64_t batch, float* y, ThreadPool& pool) {
    pool.parallel_for(weights.rows, [&](int64_t begin, int64_t end) {
        matmul_rows_reference(weights, x, batch, y, begin, end);
    });
}

}  // namespace tempered
