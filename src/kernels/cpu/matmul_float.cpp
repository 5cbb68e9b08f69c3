// Scalar twin of the float kernels (see matmul_kernels.h).
#include <cmath>
#include <vector>

#include "kernels/cpu/dequantize.h"
#include "kernels/cpu/matmul_kernels.h"

namespace tempered {

void matmul_float_rows_scalar(const WeightMatrix& weights, const float* x, int64_t batch, float* y, int64_t row_begin,
                              int64_t row_end) {
    thread_local std::vector<float> row;
    row.resize(static_cast<size_t>(weights.cols));
    const size_t row_bytes = static_cast<size_t>(*dtype_row_bytes(weights.type, weights.cols));
    for (int64_t r = row_begin; r < row_end; ++r) {
        dequantize_row(weights.type, static_cast<const uint8_t*>(weights.data) + static_cast<size_t>(r) * row_bytes,
                       row.data(), weights.cols);
        for (int64_t b = 0; b < batch; ++b) {
            const float* xb = x + b * weights.cols;
            float acc[8] = {};
            for (int64_t i = 0; i < weights.cols; ++i)
                acc[i % 8] = std::fma(row[static_cast<size_t>(i)], xb[i], acc[i % 8]);
            y[b * weights.rows + r] = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
        }
    }
}

}  // namespace tempered
