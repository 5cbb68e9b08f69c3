// Activations quantized to int8 in blocks of 32, once per matmul call, so that the dot products with
// quantized weights run on integers (the approach of the fast engines).
//
// Definition, per block of 32 floats x: amax = max |x|; d = amax / 127; q = round-half-even(x * (1/d))
// (q = 0 when d = 0). lane_sums[l] = q[4l] + q[4l+1] + q[4l+2] + q[4l+3], as an exact float: the
// row-order kernels need it for the weights' min term. sum = the block's 32 quants added (exact), and
// scaled_sum = d * float(sum): the packed kernels' min term and Q8_0's offset correction. Every
// implementation gives identical bits.
#pragma once

#include <cstdint>
#include <vector>

namespace tempered {

inline constexpr int kActivationBlock = 32;
inline constexpr int kActivationLanes = 8;  // lane l of a block covers elements 4l .. 4l+3

struct QuantizedActivations {
    int64_t batch = 0;
    int64_t cols = 0;  // a multiple of kActivationBlock
    int64_t blocks_per_row = 0;
    std::vector<int8_t> q;          // (batch, cols)
    std::vector<float> scale;       // (batch, blocks_per_row)
    std::vector<float> lane_sums;   // (batch, blocks_per_row, kActivationLanes)
    std::vector<int32_t> sum;       // (batch, blocks_per_row)
    std::vector<float> scaled_sum;  // (batch, blocks_per_row)

    const int8_t* block_q(int64_t row, int64_t block) const { return &q[(row * blocks_per_row + block) * 32]; }
    float block_scale(int64_t row, int64_t block) const { return scale[row * blocks_per_row + block]; }
    const float* block_lane_sums(int64_t row, int64_t block) const {
        return &lane_sums[(row * blocks_per_row + block) * kActivationLanes];
    }
    int32_t block_sum(int64_t row, int64_t block) const { return sum[row * blocks_per_row + block]; }
    float block_scaled_sum(int64_t row, int64_t block) const { return scaled_sum[row * blocks_per_row + block]; }
};

// x (batch, cols) -> out; reuses out's storage. cols must be a multiple of 32.
void quantize_activations(const float* x, int64_t batch, int64_t cols, QuantizedActivations& out);

// The same with AVX2; call only when cpu_supports(CpuIsa::Avx2).
void quantize_activations_avx2(const float* x, int64_t batch, int64_t cols, QuantizedActivations& out);

// Sizes out's arrays for (batch, cols).
void resize_activations(int64_t batch, int64_t cols, QuantizedActivations& out);

}  // namespace tempered
