// The KV cache's element type by its flag name (--kv-cache-dtype): chosen by the operator, never changed
// silently.
#pragma once

#include <string>

#include "core/dtype.h"
#include "core/result.h"

namespace tempered {

inline Result<DType> parse_kv_dtype(const std::string& name) {
    if (name == "f16") return DType::F16;
    if (name == "bf16") return DType::BF16;
    if (name == "f32") return DType::F32;
    if (name == "fp8") return DType::F8_E4M3;
    return Error{"--kv-cache-dtype must be f16, bf16, f32 or fp8 (got '" + name + "')"};
}

// The flag's spelling of a KV type: f16, bf16, f32, fp8.
inline std::string kv_dtype_flag_name(DType type) {
    switch (type) {
        case DType::F16: return "f16";
        case DType::BF16: return "bf16";
        case DType::F32: return "f32";
        case DType::F8_E4M3: return "fp8";
        default: return std::string(dtype_name(type));
    }
}

}  // namespace tempered
