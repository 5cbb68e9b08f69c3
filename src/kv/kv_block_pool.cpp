#include "kv/kv_block_pool.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace tempered {

Result<std::unique_ptr<KvBlockPool>> KvBlockPool::create(const KvCacheShape& shape, int64_t block_count) {
    if (!kv_type_supported(shape.type))
        return Error{"KV cache: type " + std::string(dtype_name(shape.type)) + " is not supported (f16, bf16, f32)"};
    if (shape.layer_count < 1 || shape.kv_head_count < 1 || shape.head_dim < 1 || shape.block_size < 1 ||
        block_count < 1 || block_count > INT32_MAX)
        return Error{"KV cache: every dimension and the block count must be positive"};
    if (!shape.layer_windows.empty() && static_cast<int64_t>(shape.layer_windows.size()) != shape.layer_count)
        return Error{"KV cache: " + std::to_string(shape.layer_windows.size()) + " attention windows for " +
                     std::to_string(shape.layer_count) + " layers"};
    if (std::any_of(shape.layer_windows.begin(), shape.layer_windows.end(), [](int64_t w) { return w < 0; }))
        return Error{"KV cache: an attention window is negative"};
    const double bytes = static_cast<double>(block_count) * static_cast<double>(pool_block_bytes(shape));
    if (bytes > static_cast<double>(int64_t{1} << 40))
        return Error{"KV cache: " + std::to_string(bytes) + " bytes is too large"};
    return std::unique_ptr<KvBlockPool>(new KvBlockPool(shape, block_count));
}

Result<std::unique_ptr<KvBlockPool>> KvBlockPool::for_positions(const KvCacheShape& shape, int64_t positions) {
    if (shape.block_size < 1) return Error{"KV cache: block size must be positive"};
    return create(shape, blocks_for_positions(shape, positions));
}

int64_t KvBlockPool::blocks_for_positions(const KvCacheShape& shape, int64_t positions) {
    if (shape.block_size < 1) return 0;  // create() refuses the shape
    return (positions + shape.block_size - 1) / shape.block_size * kv_layer_groups(shape).group_count();
}

int64_t KvBlockPool::pool_block_bytes(const KvCacheShape& shape) {
    return kv_layer_groups(shape).layers_per_group * (shape.block_bytes() + shape.value_block_bytes());
}

KvBlockPool::KvBlockPool(const KvCacheShape& shape, int64_t block_count)
    : shape_(shape),
      groups_(kv_layer_groups(shape)),
      block_count_(block_count),
      keys_(static_cast<size_t>(groups_.layers_per_group * block_count * shape.block_bytes())),
      values_(static_cast<size_t>(groups_.layers_per_group * block_count * shape.value_block_bytes())),
      blocks_(static_cast<size_t>(block_count)),
      hash_to_block_(static_cast<size_t>(groups_.group_count())) {
    free_blocks_.reserve(static_cast<size_t>(block_count));
    for (int64_t b = block_count - 1; b >= 0; --b) free_blocks_.push_back(static_cast<int32_t>(b));
}

std::span<const int32_t> KvBlockPool::block_table(int32_t sequence, int64_t layer) const {
    const auto it = block_tables_.find(sequence);
    if (it == block_tables_.end()) return {};
    return it->second[static_cast<size_t>(groups_.group_of_layer[static_cast<size_t>(layer)])];
}

KvBlockPool::BlockTables& KvBlockPool::tables_of(int32_t sequence) {
    return block_tables_.try_emplace(sequence, static_cast<size_t>(groups_.group_count())).first->second;
}

KvCache::LayerStorage KvBlockPool::layer_storage(int64_t layer) {
    const int64_t slab = groups_.slot_of_layer[static_cast<size_t>(layer)] * block_count_ * shape_.block_bytes();
    return {keys_.data() + slab, values_.empty() ? nullptr : values_.data() + slab, shape_.block_bytes()};
}

int64_t KvBlockPool::cached_block_count() const {
    int64_t count = 0;
    for (const auto& hashes : hash_to_block_) count += static_cast<int64_t>(hashes.size());
    return count;
}

// FNV-1a over the previous hash and the block's tokens, then a final avalanche (splitmix64).
uint64_t KvBlockPool::chain_hash(uint64_t previous, std::span<const int32_t> tokens) {
    uint64_t hash = 0xcbf29ce484222325ull ^ previous;
    for (int32_t token : tokens) {
        auto value = static_cast<uint32_t>(token);
        for (int byte = 0; byte < 4; ++byte) {
            hash ^= (value >> (8 * byte)) & 0xFF;
            hash *= 0x100000001b3ull;
        }
    }
    hash ^= hash >> 30;
    hash *= 0xbf58476d1ce4e5b9ull;
    hash ^= hash >> 27;
    hash *= 0x94d049bb133111ebull;
    return hash ^ (hash >> 31);
}

void KvBlockPool::add_reference(int32_t block) {
    BlockInfo& info = blocks_[block];
    if (info.evictable) {
        evictable_.erase(info.lru_position);
        info.evictable = false;
    }
    if (info.ref_count++ == 0) ++used_blocks_;
}

// A registered block its last user leaves stays cached, the newest at the back of the LRU order.
void KvBlockPool::drop_reference(int32_t block) {
    BlockInfo& info = blocks_[block];
    if (--info.ref_count > 0) return;
    --used_blocks_;
    if (info.hash) {
        evictable_.push_back(block);
        info.lru_position = std::prev(evictable_.end());
        info.evictable = true;
    } else {
        free_blocks_.push_back(block);
    }
}

void KvBlockPool::unregister(int32_t block) {
    BlockInfo& info = blocks_[block];
    if (!info.hash) return;
    auto& hashes = hash_to_block_[static_cast<size_t>(info.group)];
    auto it = hashes.find(*info.hash);
    if (it != hashes.end() && it->second == block) hashes.erase(it);
    info.hash.reset();
    info.tokens.clear();
}

int64_t KvBlockPool::drop_unused_cached_blocks() {
    const auto dropped = static_cast<int64_t>(evictable_.size());
    for (const int32_t block : evictable_) {
        blocks_[block].evictable = false;
        unregister(block);
        free_blocks_.push_back(block);
    }
    evictable_.clear();
    return dropped;
}

std::optional<int32_t> KvBlockPool::take_block() {
    int32_t block;
    if (!free_blocks_.empty()) {
        block = free_blocks_.back();
        free_blocks_.pop_back();
    } else if (!evictable_.empty()) {
        block = evictable_.front();
        evictable_.pop_front();
        blocks_[block].evictable = false;
        unregister(block);
    } else {
        return std::nullopt;
    }
    add_reference(block);
    return block;
}

// The block cached for `group` under `hash`, or -1; never one whose tokens differ (a hash collision).
int32_t KvBlockPool::cached_block(int64_t group, uint64_t hash, std::span<const int32_t> tokens) const {
    const auto& hashes = hash_to_block_[static_cast<size_t>(group)];
    const auto found = hashes.find(hash);
    if (found == hashes.end()) return -1;
    const BlockInfo& info = blocks_[found->second];
    return std::equal(tokens.begin(), tokens.end(), info.tokens.begin(), info.tokens.end()) ? found->second : -1;
}

// `hits`: per group, the cached block of each leading full block of a prompt (-1 if none), as far as
// every global group has one. The most blocks whose prefix every window group can also serve.
int64_t KvBlockPool::longest_usable_prefix(const BlockTables& hits) const {
    for (auto blocks = static_cast<int64_t>(hits[0].size()); blocks > 0; --blocks) {
        bool usable = true;
        for (int64_t group = 0; group < groups_.group_count() && usable; ++group) {
            const auto& group_hits = hits[static_cast<size_t>(group)];
            const int64_t window = groups_.group_window[static_cast<size_t>(group)];
            for (int64_t b = first_block_in_window(blocks * shape_.block_size, window, shape_.block_size);
                 b < blocks && usable; ++b)
                usable = group_hits[static_cast<size_t>(b)] >= 0;
        }
        if (usable) return blocks;
    }
    return 0;
}

KvBlockPool::PrefixHits KvBlockPool::find_cached_prefix(std::span<const int32_t> tokens) const {
    const int64_t block_size = shape_.block_size, group_count = groups_.group_count();
    const int64_t reusable_blocks = (static_cast<int64_t>(tokens.size()) - 1) / block_size;
    PrefixHits found{BlockTables(static_cast<size_t>(group_count)), {}, 0};
    for (int64_t b = 0; b < reusable_blocks; ++b) {
        const auto block_tokens = tokens.subspan(static_cast<size_t>(b * block_size), static_cast<size_t>(block_size));
        const uint64_t hash = chain_hash(found.chain.empty() ? 0 : found.chain.back(), block_tokens);
        bool every_global_group_has_it = true;
        for (int64_t group = 0; group < group_count; ++group) {
            const int32_t block = cached_block(group, hash, block_tokens);
            every_global_group_has_it = every_global_group_has_it && (block >= 0 || groups_.is_window_group(group));
            found.hits[static_cast<size_t>(group)].push_back(block);
        }
        if (!every_global_group_has_it) {
            for (auto& group_hits : found.hits) group_hits.pop_back();
            break;
        }
        found.chain.push_back(hash);
    }
    found.blocks = longest_usable_prefix(found.hits);
    return found;
}

int64_t KvBlockPool::cached_prefix_positions(std::span<const int32_t> tokens) const {
    return find_cached_prefix(tokens).blocks * shape_.block_size;
}

int64_t KvBlockPool::adopt_cached_prefix(int32_t sequence, std::span<const int32_t> tokens) {
    const PrefixHits found = find_cached_prefix(tokens);
    auto& tables = tables_of(sequence);
    const int64_t block_size = shape_.block_size;
    for (int64_t group = 0; group < groups_.group_count(); ++group) {
        const int64_t first = first_block_in_window(found.blocks * block_size,
                                                    groups_.group_window[static_cast<size_t>(group)], block_size);
        for (int64_t b = 0; b < found.blocks; ++b) {
            const int32_t block = b < first ? -1 : found.hits[static_cast<size_t>(group)][static_cast<size_t>(b)];
            if (block >= 0) add_reference(block);
            tables[static_cast<size_t>(group)].push_back(block);
        }
    }
    prefix_hashes_[sequence].assign(found.chain.begin(), found.chain.begin() + found.blocks);
    return found.blocks * block_size;
}

// Window groups return the blocks before the first one a query at `computed` reads; the returned
// entries always form a prefix of the table, so only the blocks since the last return are visited.
void KvBlockPool::hand_back_unreachable(BlockTables& tables, int64_t computed) {
    for (int64_t group = 0; group < groups_.group_count(); ++group) {
        if (!groups_.is_window_group(group)) continue;
        auto& table = tables[static_cast<size_t>(group)];
        const int64_t end = std::min<int64_t>(
            first_block_in_window(computed, groups_.group_window[static_cast<size_t>(group)], shape_.block_size),
            static_cast<int64_t>(table.size()));
        int64_t first = end;
        while (first > 0 && table[static_cast<size_t>(first - 1)] >= 0) --first;
        for (int64_t b = first; b < end; ++b) {  // oldest first: the LRU order evicts it first
            drop_reference(table[static_cast<size_t>(b)]);
            table[static_cast<size_t>(b)] = -1;
        }
    }
}

void KvBlockPool::hand_back_unreachable(int32_t sequence, int64_t computed) {
    const auto it = block_tables_.find(sequence);
    if (it != block_tables_.end()) hand_back_unreachable(it->second, computed);
}

int64_t KvBlockPool::blocks_needed(int32_t sequence, int64_t positions, int64_t computed) const {
    const auto it = block_tables_.find(sequence);
    const int64_t entries = it == block_tables_.end() ? 0 : static_cast<int64_t>(it->second[0].size());
    const int64_t new_entries = std::max<int64_t>((positions + shape_.block_size - 1) / shape_.block_size - entries, 0);
    int64_t needed = new_entries * groups_.group_count();
    if (it == block_tables_.end()) return needed;
    for (int64_t group = 0; group < groups_.group_count(); ++group) {
        const auto& table = it->second[static_cast<size_t>(group)];
        const int64_t end = std::min<int64_t>(
            first_block_in_window(computed, groups_.group_window[static_cast<size_t>(group)], shape_.block_size),
            entries);
        for (int64_t b = end - 1; b >= 0 && table[static_cast<size_t>(b)] >= 0; --b)
            needed -= blocks_[table[static_cast<size_t>(b)]].ref_count == 1 ? 1 : 0;
    }
    return needed;
}

int64_t KvBlockPool::blocks_to_hold(int64_t positions, int64_t computed) const {
    const int64_t entries = (positions + shape_.block_size - 1) / shape_.block_size;
    int64_t blocks = 0;
    for (const int64_t window : groups_.group_window)
        blocks += entries - std::min(first_block_in_window(computed, window, shape_.block_size), entries);
    return blocks;
}

int64_t KvBlockPool::held_block_count(int32_t sequence) const {
    const auto it = block_tables_.find(sequence);
    if (it == block_tables_.end()) return 0;
    int64_t blocks = 0;
    for (const auto& table : it->second)
        blocks += std::count_if(table.begin(), table.end(), [](int32_t block) { return block >= 0; });
    return blocks;
}

bool KvBlockPool::ensure_capacity(int32_t sequence, int64_t positions, int64_t computed) {
    if (blocks_needed(sequence, positions, computed) > available_block_count()) return false;
    auto& tables = tables_of(sequence);
    hand_back_unreachable(tables, computed);
    const int64_t entries = (positions + shape_.block_size - 1) / shape_.block_size;
    for (auto& table : tables)
        while (static_cast<int64_t>(table.size()) < entries) table.push_back(*take_block());
    return true;
}

void KvBlockPool::register_computed(int32_t sequence, std::span<const int32_t> tokens, int64_t computed) {
    auto table_it = block_tables_.find(sequence);
    if (table_it == block_tables_.end()) return;
    const BlockTables& tables = table_it->second;
    auto& hashes = prefix_hashes_[sequence];
    const int64_t block_size = shape_.block_size;
    const int64_t full_blocks = std::min<int64_t>(computed / block_size, static_cast<int64_t>(tables[0].size()));
    for (auto b = static_cast<int64_t>(hashes.size()); b < full_blocks; ++b) {
        const auto block_tokens = tokens.subspan(static_cast<size_t>(b * block_size), static_cast<size_t>(block_size));
        const uint64_t hash = chain_hash(hashes.empty() ? 0 : hashes.back(), block_tokens);
        hashes.push_back(hash);
        for (int64_t group = 0; group < groups_.group_count(); ++group) {
            const int32_t block = tables[static_cast<size_t>(group)][static_cast<size_t>(b)];
            auto& group_hashes = hash_to_block_[static_cast<size_t>(group)];
            // Handed back by a window, or already known under this chain.
            if (block < 0 || blocks_[block].hash || group_hashes.count(hash)) continue;
            blocks_[block].hash = hash;
            blocks_[block].group = group;
            blocks_[block].tokens.assign(block_tokens.begin(), block_tokens.end());
            group_hashes[hash] = block;
        }
    }
}

void KvBlockPool::copy_block(int32_t from, int32_t to) {
    const int64_t bytes = shape_.block_bytes();
    for (int64_t slot = 0; slot < groups_.layers_per_group; ++slot) {
        const int64_t slab = slot * block_count_ * bytes;
        std::memcpy(&keys_[static_cast<size_t>(slab + to * bytes)], &keys_[static_cast<size_t>(slab + from * bytes)],
                    static_cast<size_t>(bytes));
        if (values_.empty()) continue;  // a latent cache: keys only
        std::memcpy(&values_[static_cast<size_t>(slab + to * bytes)],
                    &values_[static_cast<size_t>(slab + from * bytes)], static_cast<size_t>(bytes));
    }
}

std::span<const int32_t> KvBlockPool::group_table(int32_t sequence, int64_t group) const {
    const auto it = block_tables_.find(sequence);
    if (it == block_tables_.end()) return {};
    return it->second[static_cast<size_t>(group)];
}

void KvBlockPool::read_block(int32_t block, std::span<uint8_t> out) const {
    const int64_t bytes = shape_.block_bytes();
    uint8_t* to = out.data();
    for (const std::vector<uint8_t>* plane : {&keys_, &values_}) {
        if (plane->empty()) continue;  // the values of a latent cache
        for (int64_t slot = 0; slot < groups_.layers_per_group; ++slot, to += bytes)
            std::memcpy(to, plane->data() + (slot * block_count_ + block) * bytes, static_cast<size_t>(bytes));
    }
}

void KvBlockPool::write_block(int32_t block, std::span<const uint8_t> in) {
    const int64_t bytes = shape_.block_bytes();
    const uint8_t* from = in.data();
    for (std::vector<uint8_t>* plane : {&keys_, &values_}) {
        if (plane->empty()) continue;  // the values of a latent cache
        for (int64_t slot = 0; slot < groups_.layers_per_group; ++slot, from += bytes)
            std::memcpy(plane->data() + (slot * block_count_ + block) * bytes, from, static_cast<size_t>(bytes));
    }
}

bool KvBlockPool::fork(int32_t parent, int32_t child, int64_t positions) {
    const auto parent_it = block_tables_.find(parent);
    if (parent_it == block_tables_.end()) return positions == 0;
    const BlockTables parent_tables = parent_it->second;  // copy: inserting the child may rehash
    const int64_t full_blocks = positions / shape_.block_size;
    const bool partial = positions % shape_.block_size != 0;
    if (partial && available_block_count() < groups_.group_count()) return false;
    auto& tables = tables_of(child);
    for (size_t group = 0; group < tables.size(); ++group) {
        const auto& parent_table = parent_tables[group];
        for (int64_t b = 0; b < full_blocks; ++b) {
            const int32_t block = parent_table[static_cast<size_t>(b)];
            if (block >= 0) add_reference(block);
            tables[group].push_back(block);
        }
        if (!partial) continue;
        const int32_t last = parent_table[static_cast<size_t>(full_blocks)];
        if (last < 0) {  // only when forking behind the parent's window: nothing there to copy
            tables[group].push_back(-1);
            continue;
        }
        const int32_t copy = *take_block();
        copy_block(last, copy);
        tables[group].push_back(copy);
    }
    const auto& parent_hashes = prefix_hashes_[parent];
    prefix_hashes_[child].assign(parent_hashes.begin(),
                                 parent_hashes.begin() + std::min<int64_t>(full_blocks, parent_hashes.size()));
    return true;
}

void KvBlockPool::release(int32_t sequence) {
    prefix_hashes_.erase(sequence);
    const auto it = block_tables_.find(sequence);
    if (it == block_tables_.end()) return;
    // Last block first, so that the LRU order evicts a prefix's tail before its head: a chain is only
    // reachable from its first block. Every group's block b goes before any block b - 1.
    const BlockTables& tables = it->second;
    for (auto b = static_cast<int64_t>(tables[0].size()) - 1; b >= 0; --b)
        for (const auto& table : tables)
            if (table[static_cast<size_t>(b)] >= 0) drop_reference(table[static_cast<size_t>(b)]);
    block_tables_.erase(it);
}

}  // namespace tempered
