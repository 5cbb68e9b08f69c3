#include "kv/kv_fp8.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cpu/fp8.h"

namespace tempered {

float quantize_e4m3_vector(const float* x, int64_t n, uint8_t* codes) {
    float largest = 0.0f;
    for (int64_t i = 0; i < n; ++i) largest = std::fmax(largest, std::fabs(x[i]));
    const float scale = largest / kE4m3Max;
    thread_local std::vector<float> scaled;
    scaled.resize(static_cast<size_t>(n));
    // Division, not a multiply by 1 / scale: one rounding, so the largest element is exactly 448 or
    // just over it (saturating to 448).
    for (int64_t i = 0; i < n; ++i) scaled[static_cast<size_t>(i)] = scale > 0.0f ? x[i] / scale : 0.0f;
    floats_to_e4m3(scaled.data(), codes, n);
    return scale;
}

void store_scaled_kv_position(const KvCacheShape& shape, const KvLayerView& layer, int32_t block, int64_t slot,
                              const float* key, const float* value) {
    uint8_t* key_block = layer.keys + block * layer.block_stride;
    const int64_t head_dim = shape.head_dim;
    thread_local std::vector<uint8_t> key_codes;
    key_codes.resize(static_cast<size_t>(head_dim));
    for (int64_t h = 0; h < shape.kv_head_count; ++h) {
        if (!shape.latent) {  // a latent cache's one "head" is the whole row: keys only, one scale per position
            uint8_t* value_block = layer.values + block * layer.block_stride;
            const float value_scale =
                quantize_e4m3_vector(value + h * head_dim, head_dim, value_block + shape.value_offset(slot, h, 0));
            std::memcpy(value_block + shape.scale_offset(slot, h), &value_scale, sizeof value_scale);
        }
        const float key_scale = quantize_e4m3_vector(key + h * head_dim, head_dim, key_codes.data());
        for (int64_t d = 0; d < head_dim; ++d)  // keys are transposed in a block: dimension-major
            key_block[shape.key_offset(slot, h, d)] = key_codes[static_cast<size_t>(d)];
        std::memcpy(key_block + shape.scale_offset(slot, h), &key_scale, sizeof key_scale);
    }
}

}  // namespace tempered
