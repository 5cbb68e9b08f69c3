// fp8.h's bulk conversions, 16 lanes at a time; the tail element by element with the scalar functions.
#include <immintrin.h>

#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC 12's AVX-512 headers; see matmul_q8_avx512.cpp
#if !defined(__clang__)                           // a GCC warning; clang has no such group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "kernels/cpu/fp8_avx.h"

namespace tempered {

void floats_to_e4m3_avx512(const float* src, uint8_t* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) store_e4m3_avx512(dst + i, float_to_e4m3_avx512(_mm512_loadu_ps(src + i)));
    for (; i < n; ++i) dst[i] = float_to_e4m3(src[i]);
}

void e4m3_to_floats_avx512(const uint8_t* src, float* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, load_e4m3_avx512(src + i));
    for (; i < n; ++i) dst[i] = e4m3_to_float(src[i]);
}

}  // namespace tempered
