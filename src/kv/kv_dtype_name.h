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
    return Error{"--kv-cache-dtype must be f16, bf16 or f32 (got '" + name + "')"};
}

}  // namespace tempered
