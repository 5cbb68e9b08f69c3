// AVX2 float kernels (see matmul_kernels.h): rows are dequantized four at a time, and each output is
// one 8-lane FMA chain; the four rows' chains run side by side.
#include <immintrin.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/dequantize.h"
#include "kernels/cpu/matmul_kernels.h"

namespace tempered {
namespace {

constexpr int kRowTile = 4;

float sum_lanes(const float* acc) {
    return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

// Row r as floats: F32 in place, F16 / BF16 converted exactly with vector instructions, the rest
// through the scalar dequantizer.
const float* row_as_floats(const WeightMatrix& weights, int64_t r, size_t row_bytes, float* buffer) {
    const uint8_t* src = static_cast<const uint8_t*>(weights.data) + static_cast<size_t>(r) * row_bytes;
    const int64_t n = weights.cols;
    switch (weights.type) {
        case DType::F32: return reinterpret_cast<const float*>(src);
        case DType::F16: {
            const auto* h = reinterpret_cast<const uint16_t*>(src);
            int64_t i = 0;
            for (; i + 8 <= n; i += 8)
                _mm256_storeu_ps(buffer + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i))));
            for (; i < n; ++i) buffer[i] = _cvtsh_ss(h[i]);
            return buffer;
        }
        case DType::BF16: {
            const auto* h = reinterpret_cast<const uint16_t*>(src);
            int64_t i = 0;
            for (; i + 8 <= n; i += 8) {
                const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i)));
                _mm256_storeu_ps(buffer + i, _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16)));
            }
            for (; i < n; ++i) {
                const uint32_t bits = static_cast<uint32_t>(h[i]) << 16;
                __builtin_memcpy(buffer + i, &bits, 4);
            }
            return buffer;
        }
        default: dequantize_row(weights.type, src, buffer, n); return buffer;
    }
}

template <int R>
void rows_tile(const float* const* w, const float* x, int64_t cols, float* out) {
    __m256 acc[R];
    for (auto& a : acc) a = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= cols; i += 8) {
        const __m256 xv = _mm256_loadu_ps(x + i);
        for (int r = 0; r < R; ++r) acc[r] = _mm256_fmadd_ps(_mm256_loadu_ps(w[r] + i), xv, acc[r]);
    }
    for (int r = 0; r < R; ++r) {
        float lanes[8];
        _mm256_storeu_ps(lanes, acc[r]);
        for (int64_t k = i; k < cols; ++k) lanes[k % 8] = std::fma(w[r][k], x[k], lanes[k % 8]);
        out[r] = sum_lanes(lanes);
    }
}

}  // namespace

void matmul_float_rows_avx2(const WeightMatrix& weights, const float* x, int64_t batch, float* y, int64_t row_begin,
                            int64_t row_end) {
    thread_local std::vector<float> buffer;
    buffer.resize(static_cast<size_t>(kRowTile * weights.cols));
    const size_t row_bytes = static_cast<size_t>(*dtype_row_bytes(weights.type, weights.cols));
    for (int64_t r0 = row_begin; r0 < row_end; r0 += kRowTile) {
        const int count = static_cast<int>(std::min<int64_t>(kRowTile, row_end - r0));
        const float* w[kRowTile];
        for (int r = 0; r < count; ++r)
            w[r] = row_as_floats(weights, r0 + r, row_bytes, &buffer[static_cast<size_t>(r * weights.cols)]);
        for (int64_t b = 0; b < batch; ++b) {
            float out[kRowTile];
            const float* xb = x + b * weights.cols;
            if (count == kRowTile) {
                rows_tile<kRowTile>(w, xb, weights.cols, out);
            } else {
                for (int r = 0; r < count; ++r) rows_tile<1>(&w[r], xb, weights.cols, &out[r]);
            }
            for (int r = 0; r < count; ++r) y[b * weights.rows + r0 + r] = out[r];
        }
    }
}

}  // namespace tempered
