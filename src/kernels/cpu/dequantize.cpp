#include "kernels/cpu/dequantize.h"

#include <cstring>

#include "core/half.h"
#include "kernels/cpu/quant_blocks.h"

// Each formula keeps the operation order of GGML's reference (scale first, then multiply by the
// quant, then subtract the min), so results match it bit for bit. This file is compiled for baseline
// x86-64, where the compiler cannot fuse a multiply and an add.

namespace tempered {
namespace {

void dequantize_q4_0(const BlockQ4_0* blocks, float* dst, int64_t n) {
    for (int64_t b = 0; b < n / 32; ++b, dst += 32) {
        const float d = half_to_float(blocks[b].d);
        for (int j = 0; j < 16; ++j) {
            dst[j] = d * static_cast<float>((blocks[b].qs[j] & 0x0F) - 8);
            dst[j + 16] = d * static_cast<float>((blocks[b].qs[j] >> 4) - 8);
        }
    }
}

void dequantize_q4_1(const BlockQ4_1* blocks, float* dst, int64_t n) {
    for (int64_t b = 0; b < n / 32; ++b, dst += 32) {
        const float d = half_to_float(blocks[b].d), m = half_to_float(blocks[b].m);
        for (int j = 0; j < 16; ++j) {
            dst[j] = static_cast<float>(blocks[b].qs[j] & 0x0F) * d + m;
            dst[j + 16] = static_cast<float>(blocks[b].qs[j] >> 4) * d + m;
        }
    }
}

// The 5-bit values of a Q5_0 / Q5_1 block, 0..31.
void unpack_q5(const uint8_t* qh_bytes, const uint8_t* qs, int* q) {
    uint32_t qh;
    std::memcpy(&qh, qh_bytes, 4);
    for (int j = 0; j < 16; ++j) {
        q[j] = (qs[j] & 0x0F) | static_cast<int>(((qh >> j) & 1) << 4);
        q[j + 16] = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1) << 4);
    }
}

void dequantize_q5_0(const BlockQ5_0* blocks, float* dst, int64_t n) {
    int q[32];
    for (int64_t b = 0; b < n / 32; ++b, dst += 32) {
        const float d = half_to_float(blocks[b].d);
        unpack_q5(blocks[b].qh, blocks[b].qs, q);
        for (int j = 0; j < 32; ++j) dst[j] = d * static_cast<float>(q[j] - 16);
    }
}

void dequantize_q5_1(const BlockQ5_1* blocks, float* dst, int64_t n) {
    int q[32];
    for (int64_t b = 0; b < n / 32; ++b, dst += 32) {
        const float d = half_to_float(blocks[b].d), m = half_to_float(blocks[b].m);
        unpack_q5(blocks[b].qh, blocks[b].qs, q);
        for (int j = 0; j < 32; ++j) dst[j] = d * static_cast<float>(q[j]) + m;
    }
}

void dequantize_q8_0(const BlockQ8_0* blocks, float* dst, int64_t n) {
    for (int64_t b = 0; b < n / 32; ++b, dst += 32) {
        const float d = half_to_float(blocks[b].d);
        for (int j = 0; j < 32; ++j) dst[j] = static_cast<float>(blocks[b].qs[j]) * d;
    }
}

// Q2_K: 16 sub-blocks of 16. Element e = 128 * half + 32 * shift + l takes bits (2 * shift) of
// qs[32 * half + l]; its sub-block is e / 16.
void dequantize_q2_k(const BlockQ2_K* blocks, float* dst, int64_t n) {
    for (int64_t b = 0; b < n / 256; ++b, dst += 256) {
        const BlockQ2_K& block = blocks[b];
        const float d = half_to_float(block.d), dmin = half_to_float(block.dmin);
        for (int e = 0; e < 256; ++e) {
            const int half = e / 128, shift = (e % 128) / 32, l = e % 32;
            const uint8_t sc = block.scales[e / 16];
            const float scale = d * static_cast<float>(sc & 0x0F);
            const float min = dmin * static_cast<float>(sc >> 4);
            const int q = (block.qs[32 * half + l] >> (2 * shift)) & 3;
            dst[e] = scale * static_cast<float>(q) - min;
        }
    }
}

// Q3_K: low 2 bits laid out as in Q2_K; the high bit of element e is bit (e / 32) of hmask[e % 32],
// and a clear high bit means "subtract 4". Sixteen 6-bit signed scales (offset 32).
void dequantize_q3_k(const BlockQ3_K* blocks, float* dst, int64_t n) {
    for (int64_t b = 0; b < n / 256; ++b, dst += 256) {
        const BlockQ3_K& block = blocks[b];
        const float d = half_to_float(block.d);
        float scales[16];
        for (int i = 0; i < 16; ++i) {
            const int low = (block.scales[i % 8] >> (4 * (i / 8))) & 0x0F;
            const int high = (block.scales[8 + i % 4] >> (2 * (i / 4))) & 0x03;
            scales[i] = d * static_cast<float>((low | high << 4) - 32);
        }
        for (int e = 0; e < 256; ++e) {
            const int half = e / 128, shift = (e % 128) / 32, l = e % 32;
            const int low = (block.qs[32 * half + l] >> (2 * shift)) & 3;
            const int high_set = (block.hmask[l] >> (e / 32)) & 1;
            dst[e] = scales[e / 16] * static_cast<float>(low - (high_set ? 0 : 4));
        }
    }
}

// Q4_K: 8 sub-blocks of 32; sub-block 2c takes the low nibbles of qs[32c..32c+32), 2c+1 the high.
void dequantize_q4_k(const BlockQ4_K* blocks, float* dst, int64_t n) {
    for (int64_t b = 0; b < n / 256; ++b, dst += 256) {
        const BlockQ4_K& block = blocks[b];
        const float d = half_to_float(block.d), dmin = half_to_float(block.dmin);
        for (int sub = 0; sub < 8; ++sub) {
            uint8_t sc, m;
            k_quant_scale_min(block.scales, sub, sc, m);
            const float scale = d * static_cast<float>(sc), min = dmin * static_cast<float>(m);
            const uint8_t* qs = block.qs + 32 * (sub / 2);
            const int shift = 4 * (sub % 2);
            for (int l = 0; l < 32; ++l) dst[32 * sub + l] = scale * static_cast<float>((qs[l] >> shift) & 0x0F) - min;
        }
    }
}

// Q5_K: as Q4_K, plus a fifth bit: bit `sub` of qh[l].
void dequantize_q5_k(const BlockQ5_K* blocks, float* dst, int64_t n) {
    for (int64_t b = 0; b < n / 256; ++b, dst += 256) {
        const BlockQ5_K& block = blocks[b];
        const float d = half_to_float(block.d), dmin = half_to_float(block.dmin);
        for (int sub = 0; sub < 8; ++sub) {
            uint8_t sc, m;
            k_quant_scale_min(block.scales, sub, sc, m);
            const float scale = d * static_cast<float>(sc), min = dmin * static_cast<float>(m);
            const uint8_t* qs = block.qs + 32 * (sub / 2);
            const int shift = 4 * (sub % 2);
            for (int l = 0; l < 32; ++l) {
                const int q = ((qs[l] >> shift) & 0x0F) | (((block.qh[l] >> sub) & 1) << 4);
                dst[32 * sub + l] = scale * static_cast<float>(q) - min;
            }
        }
    }
}

// Q6_K: two halves of 128. In half h, element 64 * s + k (s = 0, 1; k < 64) takes nibble s of
// ql[64h + k]; element 32 * t + l takes bits (2t) of qh[32h + l]. Values are offset by 32; sixteen
// int8 scales, one per 16 elements.
void dequantize_q6_k(const BlockQ6_K* blocks, float* dst, int64_t n) {
    for (int64_t b = 0; b < n / 256; ++b, dst += 256) {
        const BlockQ6_K& block = blocks[b];
        const float d = half_to_float(block.d);
        for (int e = 0; e < 256; ++e) {
            const int half = e / 128, within = e % 128;
            const int low = (block.ql[64 * half + within % 64] >> (4 * (within / 64))) & 0x0F;
            const int high = (block.qh[32 * half + within % 32] >> (2 * (within / 32))) & 0x03;
            const float scale = d * static_cast<float>(block.scales[e / 16]);
            dst[e] = scale * static_cast<float>((low | high << 4) - 32);
        }
    }
}

void dequantize_mxfp4(const BlockMXFP4* blocks, float* dst, int64_t n) {
    for (int64_t b = 0; b < n / 32; ++b, dst += 32) {
        const float d = mxfp4_half_scale(blocks[b].e);
        for (int j = 0; j < 16; ++j) {
            dst[j] = d * static_cast<float>(kMxfp4Doubled[blocks[b].qs[j] & 0x0F]);
            dst[j + 16] = d * static_cast<float>(kMxfp4Doubled[blocks[b].qs[j] >> 4]);
        }
    }
}

template <typename Block>
const Block* as_blocks(const void* src) {
    return static_cast<const Block*>(src);
}

}  // namespace

bool dequantize_supported(DType type) {
    switch (type) {
        case DType::F32:
        case DType::F16:
        case DType::BF16:
        case DType::Q4_0:
        case DType::Q4_1:
        case DType::Q5_0:
        case DType::Q5_1:
        case DType::Q8_0:
        case DType::Q2_K:
        case DType::Q3_K:
        case DType::Q4_K:
        case DType::Q5_K:
        case DType::Q6_K:
        case DType::MXFP4: return true;
        default: return false;
    }
}

void dequantize_row(DType type, const void* src, float* dst, int64_t n) {
    switch (type) {
        case DType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); break;
        case DType::F16:
            for (int64_t i = 0; i < n; ++i) dst[i] = half_to_float(static_cast<const uint16_t*>(src)[i]);
            break;
        case DType::BF16:
            for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_float(static_cast<const uint16_t*>(src)[i]);
            break;
        case DType::Q4_0: dequantize_q4_0(as_blocks<BlockQ4_0>(src), dst, n); break;
        case DType::Q4_1: dequantize_q4_1(as_blocks<BlockQ4_1>(src), dst, n); break;
        case DType::Q5_0: dequantize_q5_0(as_blocks<BlockQ5_0>(src), dst, n); break;
        case DType::Q5_1: dequantize_q5_1(as_blocks<BlockQ5_1>(src), dst, n); break;
        case DType::Q8_0: dequantize_q8_0(as_blocks<BlockQ8_0>(src), dst, n); break;
        case DType::Q2_K: dequantize_q2_k(as_blocks<BlockQ2_K>(src), dst, n); break;
        case DType::Q3_K: dequantize_q3_k(as_blocks<BlockQ3_K>(src), dst, n); break;
        case DType::Q4_K: dequantize_q4_k(as_blocks<BlockQ4_K>(src), dst, n); break;
        case DType::Q5_K: dequantize_q5_k(as_blocks<BlockQ5_K>(src), dst, n); break;
        case DType::Q6_K: dequantize_q6_k(as_blocks<BlockQ6_K>(src), dst, n); break;
        case DType::MXFP4: dequantize_mxfp4(as_blocks<BlockMXFP4>(src), dst, n); break;
        default: break;
    }
}

}  // namespace tempered
