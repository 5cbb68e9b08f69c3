// Where the keys and values of past positions live. The model sees only the small KvCache interface:
// storage split into fixed-size blocks, and for each sequence and layer a block table mapping position p
// to slot p % block_size of block table[p / block_size]. Who hands blocks to sequences (KvBlockPool, with
// prefix sharing and sliding windows) is not the model's concern.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/dtype.h"

namespace tempered {

// Inside a block, values are stored position by position, (slot, kv_head, head_dim), and keys
// transposed, (kv_head, head_dim, slot): attention then reads one dimension of 16 consecutive keys as
// one vector instead of transposing every key it reads (kernels/cpu/attention.h).
struct KvCacheShape {
    int64_t layer_count = 0;
    int64_t kv_head_count = 0;
    int64_t head_dim = 0;
    int64_t block_size = 16;  // positions per block
    DType type = DType::F16;  // F16, BF16, F32, or F8_E4M3 with scales (below); F16 unless the operator chose
    // Per layer, how many positions a query attends to: 0 for every earlier one (global), W for the
    // last W (a query at p sees p-W+1..p). Empty: every layer is global. See kv_layer_groups.h.
    std::vector<int64_t> layer_windows = {};
    // Multi-head latent attention: each position holds one latent "head" of head_dim elements (the
    // compressed KV plus the rope key, kv_head_count 1) as keys, and nothing as values.
    bool latent = false;

    // Bytes of one block of keys (or of values) of one layer: block_size * kv_head_count * head_dim
    // elements, and for F8_E4M3 the scales after them.
    int64_t block_bytes() const;
    int64_t value_block_bytes() const { return latent ? 0 : block_bytes(); }  // a latent cache has no values
    int64_t slot_bytes() const;  // one position's values: (kv_head_count, head_dim)
    int64_t element_bytes() const;
    // Byte offsets inside a block of element d of KV head h at slot s.
    int64_t key_offset(int64_t slot, int64_t kv_head, int64_t d) const {
        return ((kv_head * head_dim + d) * block_size + slot) * element_bytes();
    }
    int64_t value_offset(int64_t slot, int64_t kv_head, int64_t d) const {
        return ((slot * kv_head_count + kv_head) * head_dim + d) * element_bytes();
    }

    // F8_E4M3 keeps one float scale per stored head vector (per position and KV head, for keys and for
    // values: the "per-block scale" of the docs), inside the block after its elements, (kv_head, slot),
    // so that copying a block copies its scales and a position's bytes depend only on that position.
    bool has_scales() const { return type == DType::F8_E4M3; }
    int64_t scale_offset(int64_t slot, int64_t kv_head) const {
        return (block_size * slot_bytes() + 3) / 4 * 4 + (kv_head * block_size + slot) * 4;
    }
    // What the pool allocates per position, summed over the layers: keys, values (none when latent) and
    // their scales.
    int64_t bytes_per_token() const;
};

bool kv_type_supported(DType type);

// Stores one position's keys and values (kv_head_count * head_dim floats each), converted to the
// cache's type, into slot `slot` of block `block` of one layer. A latent cache stores the keys only
// (`value` and layer.values unused).
struct KvLayerView {
    uint8_t* keys;
    uint8_t* values;
    int64_t block_stride;
};
void store_kv_position(const KvCacheShape& shape, const KvLayerView& layer, int32_t block, int64_t slot,
                       const float* key, const float* value);

class KvCache {
public:
    virtual ~KvCache() = default;
    virtual const KvCacheShape& shape() const = 0;
    // The blocks `layer` of `sequence` reads, in position order; empty for a sequence the cache does
    // not know. Layers that share a block share a table. In a sliding-window layer the entries of
    // blocks no query can reach any more are -1: read only the blocks inside the window.
    virtual std::span<const int32_t> block_table(int32_t sequence, int64_t layer) const = 0;
    // Layer 0's table. Every layer's table has the same length, so its size says the capacity.
    std::span<const int32_t> block_table(int32_t sequence) const { return block_table(sequence, 0); }
    // Storage of one layer: block b of keys is (block_size, kv_head_count, head_dim) elements of
    // shape().type at keys + b * block_stride bytes; values likewise.
    struct LayerStorage {
        uint8_t* keys = nullptr;
        uint8_t* values = nullptr;
        int64_t block_stride = 0;
    };
    virtual LayerStorage layer_storage(int64_t layer) = 0;

    // Positions of `sequence` that have table entries: block_table(sequence).size() * block_size.
    int64_t capacity(int32_t sequence) const {
        return static_cast<int64_t>(block_table(sequence).size()) * shape().block_size;
    }
};

}  // namespace tempered
