// The scalar twin of the integer kernels: the definition in matmul_kernels.h, written plainly.
#include <cmath>

#include "core/half.h"
#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/quant_blocks.h"

namespace tempered {
namespace {

// Block j (32 weights) of a row, in the form the definition uses: w[i] = lane_scale[i / 4] * q[i] + min.
struct DecodedBlock {
    int q[32];
    float lane_scale[kActivationLanes];
    float min = 0.0f;
    bool has_min = false;
};

void fill_scale(DecodedBlock& out, float scale) {
    for (float& s : out.lane_scale) s = scale;
}

void decode_q4_1(const void* row, int64_t j, DecodedBlock& out) {
    const BlockQ4_1& block = static_cast<const BlockQ4_1*>(row)[j];
    for (int i = 0; i < 16; ++i) {
        out.q[i] = block.qs[i] & 0x0F;
        out.q[i + 16] = block.qs[i] >> 4;
    }
    fill_scale(out, half_to_float(block.d));
    out.min = half_to_float(block.m);
    out.has_min = true;
}

void decode_q8_0(const void* row, int64_t j, DecodedBlock& out) {
    const BlockQ8_0& block = static_cast<const BlockQ8_0*>(row)[j];
    for (int i = 0; i < 32; ++i) out.q[i] = block.qs[i];
    fill_scale(out, half_to_float(block.d));
}

void decode_mxfp4(const void* row, int64_t j, DecodedBlock& out) {
    const BlockMXFP4& block = static_cast<const BlockMXFP4*>(row)[j];
    for (int i = 0; i < 16; ++i) {
        out.q[i] = kMxfp4Doubled[block.qs[i] & 0x0F];
        out.q[i + 16] = kMxfp4Doubled[block.qs[i] >> 4];
    }
    fill_scale(out, mxfp4_half_scale(block.e));
}

// Q4_K / Q5_K: block j is sub-block j % 8 of super-block j / 8 (layouts as in dequantize.cpp).
template <typename Block, bool kFifthBit>
void decode_q45_k(const void* row, int64_t j, DecodedBlock& out) {
    const Block& block = static_cast<const Block*>(row)[j / 8];
    const int sub = static_cast<int>(j % 8);
    uint8_t sc, m;
    k_quant_scale_min(block.scales, sub, sc, m);
    const uint8_t* qs = block.qs + 32 * (sub / 2);
    for (int i = 0; i < 32; ++i) {
        out.q[i] = (qs[i] >> (4 * (sub % 2))) & 0x0F;
        if constexpr (kFifthBit) out.q[i] |= ((block.qh[i] >> sub) & 1) << 4;
    }
    fill_scale(out, half_to_float(block.d) * static_cast<float>(sc));
    out.min = -(half_to_float(block.dmin) * static_cast<float>(m));
    out.has_min = true;
}

void decode_q6_k(const void* row, int64_t j, DecodedBlock& out) {
    const BlockQ6_K& block = static_cast<const BlockQ6_K*>(row)[j / 8];
    const int first = 32 * static_cast<int>(j % 8);  // element index in the super-block
    const int half = first / 128, within = first % 128;
    for (int i = 0; i < 32; ++i) {
        const int low = (block.ql[64 * half + within % 64 + i] >> (4 * (within / 64))) & 0x0F;
        const int high = (block.qh[32 * half + i] >> (2 * (within / 32))) & 0x03;
        out.q[i] = (low | high << 4) - 32;
    }
    const float d = half_to_float(block.d);
    for (int l = 0; l < kActivationLanes; ++l)
        out.lane_scale[l] = d * static_cast<float>(block.scales[first / 16 + l / 4]);
}

using Decoder = void (*)(const void*, int64_t, DecodedBlock&);

Decoder decoder(DType type) {
    switch (type) {
        case DType::Q4_1: return decode_q4_1;
        case DType::Q8_0: return decode_q8_0;
        case DType::Q4_K: return decode_q45_k<BlockQ4_K, false>;
        case DType::Q5_K: return decode_q45_k<BlockQ5_K, true>;
        case DType::Q6_K: return decode_q6_k;
        case DType::MXFP4: return decode_mxfp4;
        default: return nullptr;
    }
}

float dot(Decoder decode, const void* row, const QuantizedActivations& x, int64_t b) {
    float acc[kActivationLanes] = {};
    DecodedBlock w;
    for (int64_t j = 0; j < x.blocks_per_row; ++j) {
        decode(row, j, w);
        const int8_t* xq = x.block_q(b, j);
        const float* lane_sums = x.block_lane_sums(b, j);
        const float dx = x.block_scale(b, j);
        for (int l = 0; l < kActivationLanes; ++l) {
            int32_t p = 0;
            for (int i = 4 * l; i < 4 * l + 4; ++i) p += w.q[i] * xq[i];
            acc[l] = std::fma(static_cast<float>(p), w.lane_scale[l] * dx, acc[l]);
            if (w.has_min) acc[l] = std::fma(lane_sums[l], w.min * dx, acc[l]);
        }
    }
    return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

}  // namespace

bool integer_kernel_supports(DType type) { return decoder(type) != nullptr; }

void matmul_q8_rows_scalar(const WeightMatrix& weights, const QuantizedActivations& x, float* y, int64_t row_begin,
                           int64_t row_end) {
    const Decoder decode = decoder(weights.type);
    const size_t row_bytes = static_cast<size_t>(*dtype_row_bytes(weights.type, weights.cols));
    for (int64_t r = row_begin; r < row_end; ++r) {
        const void* row = static_cast<const uint8_t*>(weights.data) + static_cast<size_t>(r) * row_bytes;
        for (int64_t b = 0; b < x.batch; ++b) y[b * weights.rows + r] = dot(decode, row, x, b);
    }
}

}  // namespace tempered
