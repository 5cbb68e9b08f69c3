#include "kernels/cpu/matmul.h"

#include <algorithm>
#include <vector>

#include "kernels/cpu/dequantize.h"
#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/packed_weights.h"
#include "kernels/cpu/quantize_activations.h"

namespace tempered {
namespace {

size_t row_stride_bytes(const WeightMatrix& weights) {
    const auto& traits = dtype_traits(weights.type);
    return static_cast<size_t>(weights.cols / traits.block_elements) * traits.block_bytes;
}

void matmul_rows_reference(const WeightMatrix& weights, const float* x, int64_t batch, float* y, int64_t row_begin,
                           int64_t row_end) {
    std::vector<float> row(static_cast<size_t>(weights.cols));
    const size_t stride = row_stride_bytes(weights);
    for (int64_t r = row_begin; r < row_end; ++r) {
        dequantize_row(weights.type, static_cast<const uint8_t*>(weights.data) + r * stride, row.data(), weights.cols);
        for (int64_t b = 0; b < batch; ++b) {
            const float* xb = x + b * weights.cols;
            float sum = 0.0f;
            for (int64_t i = 0; i < weights.cols; ++i) sum += row[i] * xb[i];
            y[b * weights.rows + r] = sum;
        }
    }
}

using RowKernel = void (*)(const WeightMatrix&, const QuantizedActivations&, float*, int64_t, int64_t);

RowKernel row_kernel(CpuIsa isa) {
    switch (isa) {
        case CpuIsa::Avx512: return matmul_q8_rows_avx512;
        case CpuIsa::Avx2: return matmul_q8_rows_avx2;
        case CpuIsa::Scalar: break;
    }
    return matmul_q8_rows_scalar;
}

// Row groups per range the threads take in turn: about eight ranges per thread balance a thread slowed
// by other work without paying an atomic per group. Past one, an even number: the AVX-512 kernel takes
// row groups in pairs at a batch, and a range's odd group out runs alone, slower.
int64_t packed_grain(int64_t groups, const ThreadPool& pool) {
    const int64_t grain = std::max<int64_t>(1, groups / (8 * pool.size()));
    return grain == 1 ? 1 : (grain + 1) / 2 * 2;
}

using PackedKernel = void (*)(const WeightMatrix&, const QuantizedActivations&, float*, int64_t, int64_t);

PackedKernel packed_kernel(CpuIsa isa) {
    switch (isa) {
        case CpuIsa::Avx512: return matmul_packed_groups_avx512;
        case CpuIsa::Avx2: return matmul_packed_groups_avx2;
        case CpuIsa::Scalar: break;
    }
    return matmul_packed_groups_scalar;
}

// x quantized with `isa`'s quantizer into scratch reused across calls: the forward pass allocates
// nothing once the largest batch has been seen.
const QuantizedActivations& quantized(const float* x, int64_t batch, int64_t cols, CpuIsa isa) {
    thread_local QuantizedActivations scratch;
    if (isa == CpuIsa::Scalar)
        quantize_activations(x, batch, cols, scratch);
    else
        quantize_activations_avx2(x, batch, cols, scratch);
    return scratch;
}

// Packed matrices of the same input width against one quantized x, in one pass of the threads over all
// their row groups: global group g belongs to the first matrix whose cumulative group count exceeds it.
void packed_matmuls(std::span<const WeightMatrix* const> weights, const float* x, int64_t batch,
                    std::span<float* const> y, ThreadPool& pool, CpuIsa isa) {
    const QuantizedActivations& activations = quantized(x, batch, weights[0]->cols, isa);
    const PackedKernel kernel = packed_kernel(isa);
    int64_t total_groups = 0;
    for (const WeightMatrix* w : weights) total_groups += w->rows / kPackedRows;
    pool.parallel_for_dynamic(total_groups, packed_grain(total_groups, pool), [&](int64_t begin, int64_t end) {
        int64_t first_group = 0;
        for (size_t i = 0; i < weights.size() && begin < end; ++i) {
            const int64_t groups = weights[i]->rows / kPackedRows;
            const int64_t local_begin = std::max<int64_t>(begin - first_group, 0);
            const int64_t local_end = std::min<int64_t>(end - first_group, groups);
            if (local_begin < local_end) kernel(*weights[i], activations, y[i], local_begin, local_end);
            first_group += groups;
        }
    });
}

}  // namespace

void matmul_reference(const WeightMatrix& weights, const float* x, int64_t batch, float* y) {
    matmul_rows_reference(weights, x, batch, y, 0, weights.rows);
}

void matmul_reference_q8(const WeightMatrix& weights, const float* x, int64_t batch, float* y) {
    QuantizedActivations activations;
    quantize_activations(x, batch, weights.cols, activations);
    matmul_q8_rows_scalar(weights, activations, y, 0, weights.rows);
}

void matmul_with_isa(const WeightMatrix& weights, const float* x, int64_t batch, float* y, ThreadPool& pool,
                     CpuIsa isa) {
    if (weights.layout == WeightLayout::Packed16) {
        const WeightMatrix* one[] = {&weights};
        float* const out[] = {y};
        packed_matmuls(one, x, batch, out, pool, isa);
        return;
    }
    if (!integer_kernel_supports(weights.type)) {
        const auto kernel = isa == CpuIsa::Scalar ? matmul_float_rows_scalar : matmul_float_rows_avx2;
        pool.parallel_for(weights.rows, [&](int64_t begin, int64_t end) { kernel(weights, x, batch, y, begin, end); });
        return;
    }
    const QuantizedActivations& activations = quantized(x, batch, weights.cols, isa);
    const RowKernel kernel = row_kernel(isa);
    // Split at multiples of 8 rows so that each thread's range is whole kernel tiles.
    constexpr int64_t kRowGroup = 8;
    pool.parallel_for((weights.rows + kRowGroup - 1) / kRowGroup, [&](int64_t begin, int64_t end) {
        kernel(weights, activations, y, begin * kRowGroup, std::min(end * kRowGroup, weights.rows));
    });
}

void matmul_many(std::span<const WeightMatrix* const> weights, const float* x, int64_t batch, std::span<float* const> y,
                 ThreadPool& pool) {
    const CpuIsa isa = active_cpu_isa();
    const bool all_packed = std::all_of(weights.begin(), weights.end(), [&](const WeightMatrix* w) {
        return w->layout == WeightLayout::Packed16 && w->cols == weights[0]->cols;
    });
    if (!all_packed) {
        for (size_t i = 0; i < weights.size(); ++i) matmul_with_isa(*weights[i], x, batch, y[i], pool, isa);
        return;
    }
    packed_matmuls(weights, x, batch, y, pool, isa);
}

void matmul(const WeightMatrix& weights, const float* x, int64_t batch, float* y, ThreadPool& pool) {
    matmul_with_isa(weights, x, batch, y, pool, active_cpu_isa());
}

}  // namespace tempered
