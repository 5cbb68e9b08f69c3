#include "kernels/cpu/ops.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>

#include "core/half.h"
#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/elementwise_simd.h"
#include "kernels/cpu/fast_exp.h"
#include "kernels/cpu/fp8.h"

namespace tempered {
namespace {

// half -> float for every half: attention converts each cached key and value once per query head,
// and a lookup is several times faster than the exact scalar conversion it is built from.
const std::array<float, 65536>& half_table() {
    static const auto table = [] {
        auto values = std::make_unique<std::array<float, 65536>>();
        for (uint32_t h = 0; h < 65536; ++h) (*values)[h] = half_to_float(static_cast<uint16_t>(h));
        return values;
    }();
    return *table;
}

// Eight running sums, so that the compiler can keep them in one vector register without reassociating.
float dot(const float* a, const float* b, int64_t n) {
    float sums[8] = {};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int lane = 0; lane < 8; ++lane) sums[lane] += a[i + lane] * b[i + lane];
    float sum = ((sums[0] + sums[4]) + (sums[1] + sums[5])) + ((sums[2] + sums[6]) + (sums[3] + sums[7]));
    for (; i < n; ++i) sum += a[i] * b[i];
    return sum;
}

}  // namespace

void rmsnorm(const float* x, const float* weight, float* y, int64_t n, float epsilon) {
    float sum_squares = 0.0f;
    for (int64_t i = 0; i < n; ++i) sum_squares += x[i] * x[i];
    const float scale = 1.0f / std::sqrt(sum_squares / static_cast<float>(n) + epsilon);
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale * weight[i];
}

void rmsnorm_each(float* x, int64_t count, const float* weight, int64_t n, float epsilon) {
    for (int64_t i = 0; i < count; ++i) rmsnorm(x + i * n, weight, x + i * n, n, epsilon);
}

void rope_angles(float position, const float* inverse_frequencies, int64_t pairs, float* cos_angles,
                 float* sin_angles) {
    for (int64_t i = 0; i < pairs; ++i) {
        const float angle = position * inverse_frequencies[i];
        cos_angles[i] = std::cos(angle);
        sin_angles[i] = std::sin(angle);
    }
}

void rope_rotate(float* x, int64_t rotary_dims, const float* cos_angles, const float* sin_angles,
                 RotaryPairing pairing) {
    const int64_t pairs = rotary_dims / 2;
    for (int64_t i = 0; i < pairs; ++i) {
        float* first = pairing == RotaryPairing::AdjacentElements ? &x[2 * i] : &x[i];
        float* second = pairing == RotaryPairing::AdjacentElements ? &x[2 * i + 1] : &x[i + pairs];
        const float a = *first, b = *second;
        *first = a * cos_angles[i] - b * sin_angles[i];
        *second = a * sin_angles[i] + b * cos_angles[i];
    }
}

void rope(float* x, int64_t rotary_dims, float position, const float* inverse_frequencies, RotaryPairing pairing) {
    const int64_t pairs = rotary_dims / 2;
    for (int64_t i = 0; i < pairs; ++i) {
        const float angle = position * inverse_frequencies[i];
        const float cos_angle = std::cos(angle), sin_angle = std::sin(angle);
        float* first = pairing == RotaryPairing::AdjacentElements ? &x[2 * i] : &x[i];
        float* second = pairing == RotaryPairing::AdjacentElements ? &x[2 * i + 1] : &x[i + pairs];
        const float a = *first, b = *second;
        *first = a * cos_angle - b * sin_angle;
        *second = a * sin_angle + b * cos_angle;
    }
}

void softmax(float* x, int64_t n) {
    const float max_value = *std::max_element(x, x + n);
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
        x[i] = std::exp(x[i] - max_value);
        sum += x[i];
    }
    const float inverse_sum = 1.0f / sum;
    for (int64_t i = 0; i < n; ++i) x[i] *= inverse_sum;
}

void swiglu_scalar(const float* gate, const float* up, float* out, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + canonical_exp(-gate[i])) * up[i];
}

void swiglu(const float* gate, const float* up, float* out, int64_t n) {
    switch (active_cpu_isa()) {
        case CpuIsa::Avx512: return swiglu_avx512(gate, up, out, n);
        case CpuIsa::Avx2: return swiglu_avx2(gate, up, out, n);
        case CpuIsa::Scalar: break;
    }
    swiglu_scalar(gate, up, out, n);
}

void swiglu_clamped_scalar(const float* gate, const float* up, float* out, int64_t n, float alpha, float limit) {
    for (int64_t i = 0; i < n; ++i) {
        const float x = std::min(gate[i], limit), y = std::clamp(up[i], -limit, limit);
        out[i] = x / (1.0f + canonical_exp(-alpha * x)) * (y + 1.0f);
    }
}

void swiglu_clamped(const float* gate, const float* up, float* out, int64_t n, float alpha, float limit) {
    switch (active_cpu_isa()) {
        case CpuIsa::Avx512: return swiglu_clamped_avx512(gate, up, out, n, alpha, limit);
        case CpuIsa::Avx2: return swiglu_clamped_avx2(gate, up, out, n, alpha, limit);
        case CpuIsa::Scalar: break;
    }
    swiglu_clamped_scalar(gate, up, out, n, alpha, limit);
}

void geglu_tanh_scalar(const float* gate, const float* up, float* out, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const float x = gate[i];
        const float inner = std::fma(kGeluCubic * (x * x), x, x);  // x + 0.044715 x^3
        out[i] = x / (1.0f + canonical_exp(kGeluMinusTwoSqrtTwoOverPi * inner)) * up[i];
    }
}

void geglu_tanh(const float* gate, const float* up, float* out, int64_t n) {
    switch (active_cpu_isa()) {
        case CpuIsa::Avx512: return geglu_tanh_avx512(gate, up, out, n);
        case CpuIsa::Avx2: return geglu_tanh_avx2(gate, up, out, n);
        case CpuIsa::Scalar: break;
    }
    geglu_tanh_scalar(gate, up, out, n);
}

void exp_of_scaled_difference(const float* x, float subtract, float multiply, float* out, int64_t n) {
    switch (active_cpu_isa()) {
        case CpuIsa::Avx512: return exp_of_scaled_difference_avx512(x, subtract, multiply, out, n);
        case CpuIsa::Avx2: return exp_of_scaled_difference_avx2(x, subtract, multiply, out, n);
        case CpuIsa::Scalar: break;
    }
    exp_of_scaled_difference_scalar(x, subtract, multiply, out, n);
}

void exp_of_scaled_difference_scalar(const float* x, float subtract, float multiply, float* out, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = canonical_exp((x[i] - subtract) * multiply);
}

void kv_to_float(DType type, const void* src, float* dst, int64_t n) {
    switch (type) {
        case DType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); return;
        case DType::F16: {
            const auto& table = half_table();
            const auto* halves = static_cast<const uint16_t*>(src);
            for (int64_t i = 0; i < n; ++i) dst[i] = table[halves[i]];
            return;
        }
        case DType::BF16:
            for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_float(static_cast<const uint16_t*>(src)[i]);
            return;
        case DType::F8_E4M3: return e4m3_to_floats(static_cast<const uint8_t*>(src), dst, n);
        default: return;
    }
}

void float_to_kv(DType type, const float* src, void* dst, int64_t n) {
    switch (type) {
        case DType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); return;
        case DType::F16:
            if (active_cpu_isa() != CpuIsa::Scalar) return float_to_half_avx2(src, static_cast<uint16_t*>(dst), n);
            for (int64_t i = 0; i < n; ++i) static_cast<uint16_t*>(dst)[i] = float_to_half(src[i]);
            return;
        case DType::BF16:
            for (int64_t i = 0; i < n; ++i) static_cast<uint16_t*>(dst)[i] = float_to_bf16(src[i]);
            return;
        case DType::F8_E4M3: return floats_to_e4m3(src, static_cast<uint8_t*>(dst), n);
        default: return;
    }
}

void gather_key(const KvHeadView& kv, int64_t block, int64_t slot, int64_t head_dim, float* out) {
    const int64_t element = kv.element_bytes();
    const uint8_t* first = kv.keys + block * kv.block_stride + slot * element;
    for (int64_t d = 0; d < head_dim; ++d) kv_to_float(kv.type, first + d * kv.block_size * element, &out[d], 1);
    if (kv.type != DType::F8_E4M3) return;
    float scale;
    std::memcpy(&scale, kv.key_scales + block * kv.block_stride + slot * 4, sizeof scale);
    for (int64_t d = 0; d < head_dim; ++d) out[d] *= scale;
}

void read_value(const KvHeadView& kv, int64_t block, int64_t slot, int64_t head_dim, float* out) {
    kv_to_float(kv.type, kv.values + block * kv.block_stride + slot * kv.slot_stride, out, head_dim);
    if (kv.type != DType::F8_E4M3) return;
    float scale;
    std::memcpy(&scale, kv.value_scales + block * kv.block_stride + slot * 4, sizeof scale);
    for (int64_t d = 0; d < head_dim; ++d) out[d] *= scale;
}

void attend_heads(const float* q, int64_t heads, int64_t head_dim, const KvHeadView& kv,
                  std::span<const int32_t> block_table, int64_t length, int64_t window, float scale, float* scratch,
                  float* out) {
    const int64_t first = window > 0 ? std::max<int64_t>(0, length - window) : 0;
    const int64_t seen = length - first;  // positions [first, length)
    float* scores = scratch;              // (heads, seen)
    float* row = scratch + heads * seen;  // (head_dim): one key or value, as float
    float* accumulator = row + head_dim;  // (heads, head_dim)
    auto block_of = [&](int64_t position) { return block_table[static_cast<size_t>(position / kv.block_size)]; };
    for (int64_t p = first; p < length; ++p) {
        gather_key(kv, block_of(p), p % kv.block_size, head_dim, row);
        for (int64_t h = 0; h < heads; ++h) scores[h * seen + p - first] = scale * dot(q + h * head_dim, row, head_dim);
    }
    for (int64_t h = 0; h < heads; ++h) softmax(scores + h * seen, seen);
    std::fill(accumulator, accumulator + heads * head_dim, 0.0f);
    for (int64_t p = first; p < length; ++p) {
        read_value(kv, block_of(p), p % kv.block_size, head_dim, row);
        for (int64_t h = 0; h < heads; ++h) {
            const float weight = scores[h * seen + p - first];
            float* acc = accumulator + h * head_dim;
            for (int64_t i = 0; i < head_dim; ++i) acc[i] += weight * row[i];
        }
    }
    std::copy(accumulator, accumulator + heads * head_dim, out);
}

}  // namespace tempered
