// fp8.h's bulk conversions, 8 lanes at a time; the tail element by element with the scalar functions.
#include "kernels/cpu/fp8_avx.h"

namespace tempered {

void floats_to_e4m3_avx2(const float* src, uint8_t* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) store_e4m3_avx2(dst + i, float_to_e4m3_avx2(_mm256_loadu_ps(src + i)));
    for (; i < n; ++i) dst[i] = float_to_e4m3(src[i]);
}

void e4m3_to_floats_avx2(const uint8_t* src, float* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, load_e4m3_avx2(src + i));
    for (; i < n; ++i) dst[i] = e4m3_to_float(src[i]);
}

}  // namespace tempered
