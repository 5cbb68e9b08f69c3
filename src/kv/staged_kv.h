// The KV of some positions of one sequence copied out of the pool, to move it to another server
// (prefill/decode disaggregation). Whole pool blocks, each tagged with its layer group and its position
// block, so that the receiver writes them into its own blocks for the same positions: the two pools'
// block ids never meet. Only servers with the same KvCacheShape (dtype, block size, layers, heads, head
// size, windows) may exchange them; the transfer checks that before any bytes move.
#pragma once

#include <cstdint>
#include <vector>

#include "kv/kv_block_pool.h"

namespace tempered {

struct StagedKvBlock {
    int32_t group = 0;  // layer group (kv_layer_groups.h)
    int64_t index = 0;  // positions [index * block_size, (index + 1) * block_size)
};

struct StagedKv {
    int64_t first_position = 0;  // a multiple of block_size: the receiver holds [0, first) already
    int64_t end_position = 0;    // the blocks cover positions [first, end)
    int64_t block_bytes = 0;     // KvBlockPool::pool_block_bytes(shape) of the sender
    std::vector<StagedKvBlock> blocks;
    std::vector<uint8_t> bytes;  // blocks.size() * block_bytes, the blocks in order

    int64_t byte_count() const { return static_cast<int64_t>(bytes.size()); }
};

// Copies every block `sequence` holds that covers a position in [first, end); `first` is rounded down
// to a block boundary. A window group's blocks its window already handed back are not there to copy.
StagedKv stage_kv(const KvBlockPool& pool, int32_t sequence, int64_t first, int64_t end);

// Writes `staged` into `sequence`'s blocks: every block the sequence holds that covers a position in
// [from, staged.end_position). False, having written nothing, when `staged` lacks one of those blocks
// or its block size differs from the pool's.
bool unstage_kv(KvBlockPool& pool, int32_t sequence, const StagedKv& staged, int64_t from);

}  // namespace tempered
