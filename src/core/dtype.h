// Tensor element types, numbered as GGUF numbers them (ggml_type), with their block geometry.
// A quantized row of n elements is n / block_elements blocks of block_bytes each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tempered {

enum class DType : uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    BF16 = 30,
    MXFP4 = 39,  // OCP microscaling: 32 E2M1 values sharing one E8M0 (power of two) scale; gpt-oss's experts
    // Not a GGUF type (no file holds it; dtype_traits(type_id) does not know it): the KV cache's OCP FP8
    // E4M3 elements, kernels/cpu/fp8.h. The cache keeps one float scale per stored head vector beside them.
    F8_E4M3 = 0x10000,
};

struct DTypeTraits {
    DType type;
    std::string_view name;
    uint32_t block_elements;  // elements per block (1 for plain float types)
    uint32_t block_bytes;     // bytes per block
};

// Traits of a type id read from a file; nullopt for ids we do not know (the caller reports them).
std::optional<DTypeTraits> dtype_traits(uint32_t type_id);
const DTypeTraits& dtype_traits(DType type);
std::string_view dtype_name(DType type);

// Bytes of a row of `elements` elements, or nullopt if `elements` is not a whole number of blocks.
std::optional<uint64_t> dtype_row_bytes(DType type, uint64_t elements);

}  // namespace tempered
