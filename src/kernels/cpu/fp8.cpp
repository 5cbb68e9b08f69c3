#include "kernels/cpu/fp8.h"

namespace tempered {

void floats_to_e4m3_with_isa(const float* src, uint8_t* dst, int64_t n, CpuIsa isa) {
    switch (isa) {
        case CpuIsa::Avx512: return floats_to_e4m3_avx512(src, dst, n);
        case CpuIsa::Avx2: return floats_to_e4m3_avx2(src, dst, n);
        case CpuIsa::Scalar: break;
    }
    for (int64_t i = 0; i < n; ++i) dst[i] = float_to_e4m3(src[i]);
}

void e4m3_to_floats_with_isa(const uint8_t* src, float* dst, int64_t n, CpuIsa isa) {
    switch (isa) {
        case CpuIsa::Avx512: return e4m3_to_floats_avx512(src, dst, n);
        case CpuIsa::Avx2: return e4m3_to_floats_avx2(src, dst, n);
        case CpuIsa::Scalar: break;
    }
    for (int64_t i = 0; i < n; ++i) dst[i] = e4m3_to_float(src[i]);
}

void floats_to_e4m3(const float* src, uint8_t* dst, int64_t n) {
    floats_to_e4m3_with_isa(src, dst, n, active_cpu_isa());
}

void e4m3_to_floats(const uint8_t* src, float* dst, int64_t n) {
    e4m3_to_floats_with_isa(src, dst, n, active_cpu_isa());
}

}  // namespace tempered
