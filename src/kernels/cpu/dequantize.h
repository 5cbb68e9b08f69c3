// Scalar reference dequantization: the definition every fast kernel is tested against.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace tempered {

// Whether dequantize_row knows `type`.
bool dequantize_supported(DType type);

// dst[0..n) = the n elements starting at src. n must be a multiple of the type's block size.
void dequantize_row(DType type, const void* src, float* dst, int64_t n);

}  // namespace tempered
