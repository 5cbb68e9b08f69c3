// OCP FP8 E4M3 (the KV cache's 8-bit element type, --kv-cache-dtype fp8): 1 sign bit, 4 exponent bits
// (bias 7), 3 mantissa bits; subnormals 0.mmm * 2^-6; no infinities; S.1111.111 is the only NaN pattern,
// so the largest finite magnitude is 1.75 * 2^8 = 448. Floats convert by rounding to nearest, ties to
// even, saturating at +-448 (infinities too); NaN stays NaN.
//
// The scalar functions are the reference; the AVX2 and AVX-512 twins of the bulk conversions equal them
// bit for bit (tests/unit/fp8_test.cpp, over all 256 codes and random floats).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

#include "kernels/cpu/dispatch.h"

namespace tempered {

inline constexpr float kE4m3Max = 448.0f;
inline constexpr uint32_t kE4m3NanBits = 0x7FC00000u;  // the float NaN a NaN code reads as (with its sign)

inline float e4m3_to_float(uint8_t code) {
    const uint32_t magnitude = code & 0x7Fu;
    const float sign = (code & 0x80u) != 0 ? -1.0f : 1.0f;
    if (magnitude == 0x7Fu) return std::bit_cast<float>(kE4m3NanBits | (code & 0x80u) << 24);  // signed NaN
    const uint32_t exponent = magnitude >> 3, mantissa = magnitude & 7u;
    if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -9);  // 0.mmm * 2^-6
    return sign * std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f, static_cast<int>(exponent) - 7);
}

inline uint8_t float_to_e4m3(float x) {
    const uint32_t bits = std::bit_cast<uint32_t>(x);
    const auto sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
    if (std::isnan(x)) return static_cast<uint8_t>(sign | 0x7Fu);
    const float magnitude = std::fabs(x);
    if (magnitude > kE4m3Max) return static_cast<uint8_t>(sign | 0x7Eu);
    if (magnitude < 0x1p-6f)  // subnormal: a whole number of 2^-9 steps; 8 steps is the smallest normal, code 8
        return static_cast<uint8_t>(sign | static_cast<uint32_t>(std::nearbyint(magnitude * 512.0f)));
    // Normal: keep 3 of the 23 mantissa bits, rounding to nearest even (a carry moves into the exponent),
    // and rebias the exponent from 127 to 7.
    uint32_t rounded = bits & 0x7FFFFFFFu;
    rounded += 0x7FFFFu + ((rounded >> 20) & 1u);
    return static_cast<uint8_t>(sign | ((rounded >> 20) - (120u << 3)));
}

// dst (n) = E4M3 codes of src (n); src (n) = floats of the codes. Dispatched on the CPU's ISA.
void floats_to_e4m3(const float* src, uint8_t* dst, int64_t n);
void e4m3_to_floats(const uint8_t* src, float* dst, int64_t n);
// The same with the kernels of `isa`, which the CPU must support. For tests.
void floats_to_e4m3_with_isa(const float* src, uint8_t* dst, int64_t n, CpuIsa isa);
void e4m3_to_floats_with_isa(const uint8_t* src, float* dst, int64_t n, CpuIsa isa);

void floats_to_e4m3_avx2(const float* src, uint8_t* dst, int64_t n);
void e4m3_to_floats_avx2(const uint8_t* src, float* dst, int64_t n);
void floats_to_e4m3_avx512(const float* src, uint8_t* dst, int64_t n);
void e4m3_to_floats_avx512(const uint8_t* src, float* dst, int64_t n);

}  // namespace tempered
