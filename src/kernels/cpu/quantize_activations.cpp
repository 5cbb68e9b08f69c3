#include "kernels/cpu/quantize_activations.h"

#include <cmath>

namespace tempered {

void resize_activations(int64_t batch, int64_t cols, QuantizedActivations& out) {
    out.batch = batch;
    out.cols = cols;
    out.blocks_per_row = cols / kActivationBlock;
    const auto blocks = static_cast<size_t>(batch * out.blocks_per_row);
    if (out.q.size() < blocks * kActivationBlock) out.q.resize(blocks * kActivationBlock);
    if (out.scale.size() < blocks) out.scale.resize(blocks);
    if (out.lane_sums.size() < blocks * kActivationLanes) out.lane_sums.resize(blocks * kActivationLanes);
    if (out.sum.size() < blocks) out.sum.resize(blocks);
    if (out.scaled_sum.size() < blocks) out.scaled_sum.resize(blocks);
}

void quantize_activations(const float* x, int64_t batch, int64_t cols, QuantizedActivations& out) {
    resize_activations(batch, cols, out);
    const int64_t blocks = batch * out.blocks_per_row;
    for (int64_t block = 0; block < blocks; ++block) {
        const float* in = x + block * kActivationBlock;
        float amax = 0.0f;
        for (int i = 0; i < kActivationBlock; ++i) amax = std::fmax(amax, std::fabs(in[i]));
        const float d = amax / 127.0f;
        const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
        int8_t* q = &out.q[static_cast<size_t>(block * kActivationBlock)];
        for (int i = 0; i < kActivationBlock; ++i) q[i] = static_cast<int8_t>(std::nearbyint(in[i] * inverse));
        out.scale[static_cast<size_t>(block)] = d;
        float* sums = &out.lane_sums[static_cast<size_t>(block * kActivationLanes)];
        for (int l = 0; l < kActivationLanes; ++l)
            sums[l] = static_cast<float>(q[4 * l] + q[4 * l + 1] + q[4 * l + 2] + q[4 * l + 3]);
        int32_t total = 0;
        for (int i = 0; i < kActivationBlock; ++i) total += q[i];
        out.sum[static_cast<size_t>(block)] = total;
        out.scaled_sum[static_cast<size_t>(block)] = d * static_cast<float>(total);
    }
}

}  // namespace tempered
