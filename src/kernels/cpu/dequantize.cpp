#include "kernels/cpu/dequantize.h"

#include <cstring>

#include "core/half.h"

namespace tempered {
namespace {

struct BlockQ4_1 {
    uint16_t d, m;
    uint8_t qs[16];
};
struct BlockQ8_0 {
    uint16_t d;
    int8_t qs[32];
};
static_assert(sizeof(BlockQ4_1) == 20 && sizeof(BlockQ8_0) == 34);

void dequantize_q4_1(const BlockQ4_1* blocks, float* dst, int64_t n) {
    for (int64_t b = 0; b < n / 32; ++b) {
        const float d = half_to_float(blocks[b].d), m = half_to_float(blocks[b].m);
        for (int j = 0; j < 16; ++j) {
            dst[b * 32 + j] = static_cast<float>(blocks[b].qs[j] & 0x0F) * d + m;
            dst[b * 32 + j + 16] = static_cast<float>(blocks[b].qs[j] >> 4) * d + m;
        }
    }
}

void dequantize_q8_0(const BlockQ8_0* blocks, float* dst, int64_t n) {
    for (int64_t b = 0; b < n / 32; ++b) {
        const float d = half_to_float(blocks[b].d);
        for (int j = 0; j < 32; ++j) dst[b * 32 + j] = static_cast<float>(blocks[b].qs[j]) * d;
    }
}

}  // namespace

bool dequantize_supported(DType type) {
    switch (type) {
        case DType::F32: case DType::F16: case DType::BF16: case DType::Q4_1: case DType::Q8_0:
            return true;
        default:
            return false;
    }
}

void dequantize_row(DType type, const void* src, float* dst, int64_t n) {
    switch (type) {
        case DType::F32:
            std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
            break;
        case DType::F16:
            for (int64_t i = 0; i < n; ++i) dst[i] = half_to_float(static_cast<const uint16_t*>(src)[i]);
            break;
        case DType::BF16:
            for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_float(static_cast<const uint16_t*>(src)[i]);
            break;
        case DType::Q4_1:
            dequantize_q4_1(static_cast<const BlockQ4_1*>(src), dst, n);
            break;
        case DType::Q8_0:
            dequantize_q8_0(static_cast<const BlockQ8_0*>(src), dst, n);
            break;
        default:
            break;
    }
}

}  // namespace tempered
