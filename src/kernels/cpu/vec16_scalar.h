// The scalar 16-lane vector of the attention kernels: 16 floats in an array, each operation a plain
// loop; the reference the AVX2 and AVX-512 vectors match bit for bit.
// Shared by the attention kernels compiled for this instruction set only (attention_scalar.cpp,
// latent_attention_scalar.cpp): the interface is attention_kernel.h's Vec.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

#include "core/dtype.h"
#include "kernels/cpu/fast_exp.h"
#include "kernels/cpu/fp8.h"
#include "kernels/cpu/ops.h"

namespace tempered::simd {

struct ScalarVec {
    using Type = std::array<float, 16>;
    static Type zero() { return set1(0.0f); }
    static Type set1(float value) {
        Type v;
        v.fill(value);
        return v;
    }
    static Type load(const float* p) {
        Type v;
        std::copy(p, p + 16, v.begin());
        return v;
    }
    static void store(float* p, const Type& v) { std::copy(v.begin(), v.end(), p); }
    template <typename Op>
    static Type map(const Type& a, const Type& b, Op op) {
        Type v;
        for (int i = 0; i < 16; ++i) v[i] = op(a[i], b[i]);
        return v;
    }
    static Type add(const Type& a, const Type& b) {
        return map(a, b, [](float x, float y) { return x + y; });
    }
    static Type sub(const Type& a, const Type& b) {
        return map(a, b, [](float x, float y) { return x - y; });
    }
    static Type mul(const Type& a, const Type& b) {
        return map(a, b, [](float x, float y) { return x * y; });
    }
    static Type max(const Type& a, const Type& b) {
        return map(a, b, [](float x, float y) { return std::max(x, y); });
    }
    static Type fma(const Type& a, const Type& b, const Type& c) {
        Type v;
        for (int i = 0; i < 16; ++i) v[i] = std::fma(a[i], b[i], c[i]);
        return v;
    }
    static float hmax(const Type& v) { return *std::max_element(v.begin(), v.end()); }
    static float hsum(const Type& v) {
        Type s = v;
        for (int width = 8; width >= 1; width /= 2)
            for (int i = 0; i < width; ++i) s[i] = s[i] + s[i + width];
        return s[0];
    }
    static Type keep_first(const Type& v, int64_t count, float fill) {
        Type out = v;
        for (int64_t i = std::max<int64_t>(count, 0); i < 16; ++i) out[i] = fill;
        return out;
    }
    static Type drop_first(const Type& v, int64_t count, float fill) {
        Type out = v;
        for (int64_t i = 0; i < std::min<int64_t>(count, 16); ++i) out[i] = fill;
        return out;
    }
    template <DType kType>
    static Type load_kv(const uint8_t* p) {
        Type v;
        tempered::kv_to_float(kType, p, v.data(), 16);
        return v;
    }
    static Type load_e4m3(const uint8_t* p) {
        Type v;
        for (int i = 0; i < 16; ++i) v[i] = e4m3_to_float(p[i]);
        return v;
    }
    static Type exp(const Type& v) {
        Type out;
        for (int i = 0; i < 16; ++i) out[i] = canonical_exp(v[i]);
        return out;
    }
    // out row c (16 floats at out + c * out_stride) = column c of the 16 rows at in + r * in_stride.
    static void transpose(const float* in, int64_t in_stride, float* out, int64_t out_stride) {
        for (int64_t r = 0; r < 16; ++r)
            for (int64_t c = 0; c < 16; ++c) out[c * out_stride + r] = in[r * in_stride + c];
    }
};

}  // namespace tempered::simd
