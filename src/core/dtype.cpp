#include "core/dtype.h"

#include <array>

namespace tempered {
namespace {

// QK_K = 256 super-blocks for the K-quants; sizes follow the GGUF specification.
constexpr std::array<DTypeTraits, 17> kTraits{{
    {DType::F32, "F32", 1, 4},
    {DType::F16, "F16", 1, 2},
    {DType::Q4_0, "Q4_0", 32, 18},
    {DType::Q4_1, "Q4_1", 32, 20},
    {DType::Q5_0, "Q5_0", 32, 22},
    {DType::Q5_1, "Q5_1", 32, 24},
    {DType::Q8_0, "Q8_0", 32, 34},
    {DType::Q8_1, "Q8_1", 32, 36},
    {DType::Q2_K, "Q2_K", 256, 84},
    {DType::Q3_K, "Q3_K", 256, 110},
    {DType::Q4_K, "Q4_K", 256, 144},
    {DType::Q5_K, "Q5_K", 256, 176},
    {DType::Q6_K, "Q6_K", 256, 210},
    {DType::Q8_K, "Q8_K", 256, 292},
    {DType::BF16, "BF16", 1, 2},
    {DType::MXFP4, "MXFP4", 32, 17},
    {DType::F8_E4M3, "F8_E4M3", 1, 1},
}};

}  // namespace

std::optional<DTypeTraits> dtype_traits(uint32_t type_id) {
    for (const auto& traits : kTraits)
        if (static_cast<uint32_t>(traits.type) == type_id && traits.type != DType::F8_E4M3) return traits;
    return std::nullopt;
}

const DTypeTraits& dtype_traits(DType type) {
    for (const auto& traits : kTraits)
        if (traits.type == type) return traits;
    return kTraits[0];  // unreachable: every enumerator is in the table
}

std::string_view dtype_name(DType type) { return dtype_traits(type).name; }

std::optional<uint64_t> dtype_row_bytes(DType type, uint64_t elements) {
    const auto& traits = dtype_traits(type);
    if (elements % traits.block_elements != 0) return std::nullopt;
    const uint64_t blocks = elements / traits.block_elements;
    if (blocks > UINT64_MAX / traits.block_bytes) return std::nullopt;  // would overflow
    return blocks * traits.block_bytes;
}

}  // namespace tempered
