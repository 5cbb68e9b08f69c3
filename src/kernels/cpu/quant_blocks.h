// Memory layouts of GGUF's quantized blocks, as they sit in the file. Shared by the scalar
// dequantizer and the matmul kernels. Half-precision fields are raw IEEE half bits.
#pragma once

#include <bit>
#include <cstdint>

namespace tempered {

inline constexpr int kQ8BlockElements = 32;      // "legacy" quants: Q4_0 .. Q8_0
inline constexpr int kSuperBlockElements = 256;  // K-quants

struct BlockQ4_0 {
    uint16_t d;
    uint8_t qs[16];  // element j in the low nibble of qs[j], element j + 16 in the high one
};
// MXFP4 (OCP Microscaling Formats v1.0): a shared scale 2^(e - 127) and 32 E2M1 codes (sign, 2-bit exponent,
// 1-bit mantissa: 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives); element j in the low nibble of qs[j],
// element j + 16 in the high one, as Q4_0.
struct BlockMXFP4 {
    uint8_t e;
    uint8_t qs[16];
};
struct BlockQ4_1 {
    uint16_t d, m;
    uint8_t qs[16];
};
struct BlockQ5_0 {
    uint16_t d;
    uint8_t qh[4];  // bit j (little-endian 32-bit) is the fifth bit of element j
    uint8_t qs[16];
};
struct BlockQ5_1 {
    uint16_t d, m;
    uint8_t qh[4];
    uint8_t qs[16];
};
struct BlockQ8_0 {
    uint16_t d;
    int8_t qs[32];
};
struct BlockQ2_K {
    uint8_t scales[16];  // per 16 elements: low nibble scale, high nibble min
    uint8_t qs[64];      // 2-bit values
    uint16_t d, dmin;
};
struct BlockQ3_K {
    uint8_t hmask[32];   // high bit of each 3-bit value
    uint8_t qs[64];      // low 2 bits
    uint8_t scales[12];  // 16 six-bit scales, packed
    uint16_t d;
};
struct BlockQ4_K {
    uint16_t d, dmin;
    uint8_t scales[12];  // 8 six-bit scales and 8 six-bit mins, packed
    uint8_t qs[128];
};
struct BlockQ5_K {
    uint16_t d, dmin;
    uint8_t scales[12];
    uint8_t qh[32];
    uint8_t qs[128];
};
struct BlockQ6_K {
    uint8_t ql[128];  // low 4 bits
    uint8_t qh[64];   // high 2 bits
    int8_t scales[16];
    uint16_t d;
};

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 && sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210 && sizeof(BlockMXFP4) == 17);

// An MXFP4 block's values as integers and one scale: E2M1 code c is kMxfp4Doubled[c] / 2, so a block's element is
// kMxfp4Doubled[c] * mxfp4_half_scale(e), with 2^(e - 128) built from its bits (a float32 subnormal below e = 2), as
// GGML's reference does.
inline constexpr int8_t kMxfp4Doubled[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// kMxfp4Doubled + kMxfp4Offset (0..24): the unsigned form the packed kernels multiply (vpdpbusd, vpmaddubsw), taking
// kMxfp4Offset times the activations' block sum back after.
inline constexpr int kMxfp4Offset = 12;
inline constexpr uint8_t kMxfp4OffsetDoubled[16] = {12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0};
static_assert([] {
    for (int i = 0; i < 16; ++i)
        if (kMxfp4OffsetDoubled[i] != kMxfp4Doubled[i] + kMxfp4Offset) return false;
    return true;
}());

inline float mxfp4_half_scale(uint8_t e) {
    const uint32_t bits = e < 2 ? uint32_t{0x00200000} << e : static_cast<uint32_t>(e - 1) << 23;
    return std::bit_cast<float>(bits);
}

// Scale and min of sub-block `index` (0..7) of a Q4_K / Q5_K block (six bits each).
inline void k_quant_scale_min(const uint8_t* scales, int index, uint8_t& scale, uint8_t& min) {
    if (index < 4) {
        scale = scales[index] & 63;
        min = scales[index + 4] & 63;
    } else {
        scale = static_cast<uint8_t>((scales[index + 4] & 0x0F) | ((scales[index - 4] >> 6) << 4));
        min = static_cast<uint8_t>((scales[index + 4] >> 4) | ((scales[index] >> 6) << 4));
    }
}

}  // namespace tempered
