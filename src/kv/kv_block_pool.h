// KvBlockPool: the server's KV cache. A fixed pool of blocks shared by every running sequence, with
// prefix reuse: a block whose positions are all computed is registered under a hash chained over the
// tokens of it and of every block before it, so a later request with the same prefix (a shared system
// prompt) takes the block instead of recomputing it. Blocks are reference counted; a registered block
// whose last user leaves stays cached until the pool needs room, then the least recently used goes.
//
// A block holds one layer group (kv_layer_groups.h): all layers for a model of global attention only,
// g layers of one window or of global attention otherwise. Each sequence has a block table per group;
// a sliding-window group hands back the blocks its window has left behind (their entries become -1),
// so a long sequence of a window model holds its window, not its whole length, in those layers.
//
// The model sees it through the KvCache interface (block tables + storage), nothing more.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/result.h"
#include "kv/kv_cache.h"
#include "kv/kv_layer_groups.h"

namespace tempered {

class KvBlockPool final : public KvCache {
public:
    static Result<std::unique_ptr<KvBlockPool>> create(const KvCacheShape& shape, int64_t block_count);
    // A pool of just enough blocks for `positions` positions of one sequence (a test's or a tool's cache).
    static Result<std::unique_ptr<KvBlockPool>> for_positions(const KvCacheShape& shape, int64_t positions);
    // Blocks that hold `positions` positions of every layer, none handed back: one per block_size
    // positions and layer group. The same memory as a cache of that many positions without groups.
    static int64_t blocks_for_positions(const KvCacheShape& shape, int64_t positions);
    // Bytes of one pool block: keys and values of a group's layers for block_size positions.
    static int64_t pool_block_bytes(const KvCacheShape& shape);

    const KvCacheShape& shape() const override { return shape_; }
    using KvCache::block_table;
    std::span<const int32_t> block_table(int32_t sequence, int64_t layer) const override;
    LayerStorage layer_storage(int64_t layer) override;
    const KvLayerGroups& layer_groups() const { return groups_; }

    // Gives a new `sequence` the cached blocks matching the longest prefix of `tokens` made of full
    // blocks, leaving at least one token of `tokens` to compute (its logits are needed). Returns the
    // number of positions covered (a multiple of block_size). A prefix of length L counts only if every
    // global group has all its blocks and every window group those its window reaches from position L.
    // The sequence must have no blocks yet.
    int64_t adopt_cached_prefix(int32_t sequence, std::span<const int32_t> tokens);
    // The positions adopt_cached_prefix would cover now, changing nothing (blocks may be evicted before
    // the adoption, which can then cover fewer).
    int64_t cached_prefix_positions(std::span<const int32_t> tokens) const;

    // Gives `sequence` blocks for positions [0, positions). Positions [0, computed) are in the cache
    // and the next query is at `computed`, so a window group first hands back the blocks no query from
    // there on can reach. False, changing nothing, when even evicting every unused cached block would
    // not make room: the caller preempts someone.
    bool ensure_capacity(int32_t sequence, int64_t positions, int64_t computed = 0);

    // Window groups hand back the blocks a query at `computed` can no longer read (ensure_capacity does
    // this before it takes new blocks; a sequence given all its blocks at once needs it after).
    void hand_back_unreachable(int32_t sequence, int64_t computed);

    // Blocks ensure_capacity(sequence, positions, computed) would take from the pool: new blocks in
    // every group minus the window blocks it hands back that nobody else holds. Negative when it
    // returns more than it takes.
    int64_t blocks_needed(int32_t sequence, int64_t positions, int64_t computed = 0) const;
    // Blocks a sequence holds once it has positions [0, positions) with its next query at `computed`:
    // every block in a global group, those of the window in a window group.
    int64_t blocks_to_hold(int64_t positions, int64_t computed) const;
    // Blocks `sequence` holds now (shared ones included), over every group.
    int64_t held_block_count(int32_t sequence) const;

    // Registers the full blocks of `sequence` among its first `computed` positions, whose tokens are
    // `tokens[0, computed)`, so that later requests can reuse them.
    void register_computed(int32_t sequence, std::span<const int32_t> tokens, int64_t computed);

    // `child` gets the blocks of `parent` for positions [0, positions): full blocks are shared, a
    // partial last block is copied (the two will write different tokens there), entries a window
    // handed back stay -1. False if no room.
    bool fork(int32_t parent, int32_t child, int64_t positions);

    // Drops `sequence`'s blocks: registered ones stay cached for reuse, the rest return to the pool.
    void release(int32_t sequence);

    // `sequence`'s table for layer group `group` (empty for a sequence the pool does not know).
    std::span<const int32_t> group_table(int32_t sequence, int64_t group) const;
    // The bytes of pool block `block` (pool_block_bytes(shape())): every layer of its group, keys then
    // values, so that two pools of one shape exchange blocks byte for byte.
    void read_block(int32_t block, std::span<uint8_t> out) const;
    void write_block(int32_t block, std::span<const uint8_t> in);
    // Forgets every cached block nobody uses (unregistered, back to the free list); blocks a sequence
    // holds keep their registration. Returns how many were dropped. The server's /flush_cache.
    int64_t drop_unused_cached_blocks();

    int64_t block_count() const { return block_count_; }
    // Blocks held by at least one sequence (not counting cached blocks nobody uses).
    int64_t used_block_count() const { return used_blocks_; }
    // Blocks that could be handed out now: free plus unused cached ones.
    int64_t available_block_count() const { return static_cast<int64_t>(free_blocks_.size() + evictable_.size()); }
    int64_t cached_block_count() const;

private:
    struct BlockInfo {
        int32_t ref_count = 0;
        std::optional<uint64_t> hash;               // set while registered for reuse
        int64_t group = 0;                          // the layer group it is registered for
        std::vector<int32_t> tokens;                // the tokens it holds when registered (checked on reuse)
        std::list<int32_t>::iterator lru_position;  // valid while evictable
        bool evictable = false;
    };

    using BlockTables = std::vector<std::vector<int32_t>>;  // one table per layer group

    KvBlockPool(const KvCacheShape& shape, int64_t block_count);
    BlockTables& tables_of(int32_t sequence);
    std::optional<int32_t> take_block();
    void unregister(int32_t block);
    void add_reference(int32_t block);
    void drop_reference(int32_t block);
    void hand_back_unreachable(BlockTables& tables, int64_t computed);
    int32_t cached_block(int64_t group, uint64_t hash, std::span<const int32_t> tokens) const;
    struct PrefixHits {
        BlockTables hits;             // per group, the cached block of each leading full block, or -1
        std::vector<uint64_t> chain;  // their chain hashes
        int64_t blocks = 0;           // how many of them every group can serve
    };
    PrefixHits find_cached_prefix(std::span<const int32_t> tokens) const;
    int64_t longest_usable_prefix(const BlockTables& hits) const;
    void copy_block(int32_t from, int32_t to);
    static uint64_t chain_hash(uint64_t previous, std::span<const int32_t> tokens);

    KvCacheShape shape_;
    KvLayerGroups groups_;
    int64_t block_count_ = 0;
    // (slot in group, block, block_size, kv_head_count, head_dim) of shape_.type: layer l of a group
    // lives in slab slot_of_layer[l]. With one group of every layer this is (layer, block, ...).
    std::vector<uint8_t> keys_;
    std::vector<uint8_t> values_;  // same layout
    std::vector<BlockInfo> blocks_;
    std::vector<int32_t> free_blocks_;
    std::list<int32_t> evictable_;  // cached, unused blocks; least recently used first
    std::vector<std::unordered_map<uint64_t, int32_t>> hash_to_block_;  // per group
    std::unordered_map<int32_t, BlockTables> block_tables_;
    // sequence -> the chain hashes of its leading full blocks that are computed (registered or not).
    std::unordered_map<int32_t, std::vector<uint64_t>> prefix_hashes_;
    int64_t used_blocks_ = 0;
};

}  // namespace tempered
