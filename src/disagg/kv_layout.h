// What a prefill server and a decode server must agree on before KV bytes move between them: the same
// block geometry, element type and layer grouping (so a staged block means the same thing to both
// pools), and the same weights (a fingerprint, so KV computed by one model never feeds another).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/dtype.h"
#include "kv/kv_cache.h"

namespace tempered {

struct KvLayout {
    DType dtype = DType::F16;
    int64_t block_size = 0;
    int64_t layer_count = 0;
    int64_t kv_head_count = 0;
    int64_t head_dim = 0;
    uint64_t windows_hash = 0;     // FNV-1a over the per-layer attention windows
    int64_t group_count = 0;       // layer groups (kv_layer_groups.h): a staged block's group is below it
    int64_t pool_block_bytes = 0;  // KvBlockPool::pool_block_bytes(shape)
    uint64_t model_fingerprint = 0;

    bool operator==(const KvLayout&) const = default;
};

// The layout of a pool of `shape` serving the model of `model_fingerprint` (formats/model_fingerprint.h).
KvLayout kv_layout_of(const KvCacheShape& shape, uint64_t model_fingerprint);

// The first field where the prefill's layout differs from the decode's, as a sentence with both values
// ("KV dtype differs: prefill f16, decode f32"); nothing when they agree.
std::optional<std::string> describe_mismatch(const KvLayout& prefill, const KvLayout& decode);

}  // namespace tempered
