#include "kv/kv_cache.h"

#include <cassert>
#include <cstring>
#include <vector>

#include "kernels/cpu/ops.h"
#include "kv/kv_fp8.h"

namespace tempered {

int64_t KvCacheShape::element_bytes() const { return static_cast<int64_t>(dtype_traits(type).block_bytes); }

int64_t KvCacheShape::slot_bytes() const { return kv_head_count * head_dim * element_bytes(); }

void store_kv_position(const KvCacheShape& shape, const KvLayerView& layer, int32_t block, int64_t slot,
                       const float* key, const float* value) {
    assert(block >= 0 && "a window handed this block back: no query can read what would be stored");
    if (shape.has_scales()) return store_scaled_kv_position(shape, layer, block, slot, key, value);
    uint8_t* key_block = layer.keys + block * layer.block_stride;
    uint8_t* value_block = shape.latent ? nullptr : layer.values + block * layer.block_stride;
    const int64_t width = shape.kv_head_count * shape.head_dim, element = shape.element_bytes();
    if (!shape.latent) float_to_kv(shape.type, value, value_block + shape.value_offset(slot, 0, 0), width);
    thread_local std::vector<uint8_t> converted;
    converted.resize(static_cast<size_t>(width * element));
    float_to_kv(shape.type, key, converted.data(), width);
    for (int64_t i = 0; i < width; ++i)  // element i is (kv_head i / head_dim, dimension i % head_dim)
        std::memcpy(key_block + shape.key_offset(slot, 0, i), &converted[static_cast<size_t>(i * element)],
                    static_cast<size_t>(element));
}

int64_t KvCacheShape::block_bytes() const {
    return has_scales() ? scale_offset(0, kv_head_count) : block_size * slot_bytes();
}

int64_t KvCacheShape::bytes_per_token() const {
    return layer_count * (block_bytes() + value_block_bytes()) / block_size;
}

bool kv_type_supported(DType type) {
    return type == DType::F16 || type == DType::BF16 || type == DType::F32 || type == DType::F8_E4M3;
}

}  // namespace tempered
