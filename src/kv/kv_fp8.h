// Storing a position into an F8_E4M3 cache (KvCacheShape::has_scales): each head vector of head_dim
// values gets its own scale, max |x| / 448, so its largest element lands on E4M3's largest code and
// the rest keep 3 mantissa bits relative to their own magnitude. Nothing is ever requantized: a
// position's codes and scales depend only on its own keys and values. A latent cache (KvCacheShape::latent)
// has one such vector per position, its row [latent | rope key], stored as keys only: one scale per position.
#pragma once

#include <cstdint>

#include "kv/kv_cache.h"

namespace tempered {

// codes (n) = E4M3 of x (n) / scale; returns the scale (0 for an all-zero vector, whose codes are 0).
float quantize_e4m3_vector(const float* x, int64_t n, uint8_t* codes);

// store_kv_position for a cache with scales.
void store_scaled_kv_position(const KvCacheShape& shape, const KvLayerView& layer, int32_t block, int64_t slot,
                              const float* key, const float* value);

}  // namespace tempered
