// Random weights and activations for the kernel tests, and bit-level comparison.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "core/half.h"
#include "kernels/cpu/dispatch.h"

namespace tempered {

// Random quant bytes with finite, realistic scales and mins in place of the random half fields.
inline std::vector<uint8_t> random_weights(DType type, int64_t rows, int64_t cols, std::mt19937& rng) {
    const auto& traits = dtype_traits(type);
    const size_t block_count = static_cast<size_t>(rows * cols / traits.block_elements);
    std::vector<uint8_t> data(block_count * traits.block_bytes);
    std::uniform_int_distribution<int> byte(0, 255);
    for (auto& value : data) value = static_cast<uint8_t>(byte(rng));
    std::uniform_real_distribution<float> scale(0.001f, 0.05f), min(-0.4f, 0.0f);
    for (size_t b = 0; b < block_count; ++b) {  // finite scales in place of the random half fields
        uint8_t* block = data.data() + b * traits.block_bytes;
        const uint16_t d = float_to_half(scale(rng)), m = float_to_half(min(rng));
        if (type == DType::Q4_1 || type == DType::Q4_0 || type == DType::Q8_0 || type == DType::Q5_0 ||
            type == DType::Q5_1) {
            std::memcpy(block, &d, 2);
            if (type == DType::Q4_1 || type == DType::Q5_1) std::memcpy(block + 2, &m, 2);
        } else if (type == DType::Q4_K || type == DType::Q5_K) {
            std::memcpy(block, &d, 2);
            std::memcpy(block + 2, &d, 2);
        } else if (type == DType::Q6_K) {
            std::memcpy(block + 208, &d, 2);
        } else if (type == DType::Q3_K) {
            std::memcpy(block + 108, &d, 2);
        } else if (type == DType::Q2_K) {
            std::memcpy(block + 80, &d, 2);
            std::memcpy(block + 82, &d, 2);
        } else if (type == DType::MXFP4) {  // scales 2^-10 .. 2^-4, as trained weights have
            block[0] = static_cast<uint8_t>(117 + byte(rng) % 7);
        }
    }
    return data;
}

inline std::vector<float> random_activations(int64_t batch, int64_t cols, std::mt19937& rng) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(batch * cols));
    for (auto& value : x) value = normal(rng);
    for (int64_t i = 0; i < 32 && i < cols; ++i) x[static_cast<size_t>(i)] = 0.0f;  // an all-zero block
    if (cols > 64) x[40] = 1e4f;                                                    // an outlier
    return x;
}

inline std::vector<CpuIsa> supported_isas() {
    std::vector<CpuIsa> isas;
    for (CpuIsa isa : {CpuIsa::Scalar, CpuIsa::Avx2, CpuIsa::Avx512})
        if (cpu_supports(isa)) isas.push_back(isa);
    return isas;
}

inline int count_bit_differences(const std::vector<float>& a, const std::vector<float>& b) {
    int differences = 0;
    for (size_t i = 0; i < a.size(); ++i) differences += std::bit_cast<uint32_t>(a[i]) != std::bit_cast<uint32_t>(b[i]);
    return differences;
}

// How far a product with 8-bit activations may be from the float one, for weight row w and
// activation row x (cols): per block of 32 the activation error is at most amax / 254 per element,
// times the block's sum |w|, plus float rounding (1e-5 of sum |w * x|).
inline double activation_quantization_bound(const float* w, const float* x, int64_t cols) {
    double bound = 0.0, magnitude = 0.0;
    for (int64_t j = 0; j < cols; j += 32) {
        double amax = 0.0, weight_sum = 0.0;
        for (int64_t i = j; i < j + 32; ++i) {
            amax = std::max(amax, static_cast<double>(std::fabs(x[i])));
            weight_sum += std::fabs(w[i]);
            magnitude += std::fabs(w[i] * x[i]);
        }
        bound += amax / 254.0 * weight_sum;
    }
    return bound * 1.0001 + 1e-5 * magnitude;
}

}  // namespace tempered
