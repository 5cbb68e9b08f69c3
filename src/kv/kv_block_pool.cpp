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
    const double bytes = 2.0 * static_cast<double>(shape.layer_count) * static_cast<double>(block_count) *
                         static_cast<double>(shape.block_bytes());
    if (bytes > static_cast<double>(int64_t{1} << 40))
        return Error{"KV cache: " + std::to_string(bytes) + " bytes is too large"};
    return std::unique_ptr<KvBlockPool>(new KvBlockPool(shape, block_count));
}

Result<std::unique_ptr<KvBlockPool>> KvBlockPool::for_positions(const KvCacheShape& shape, int64_t positions) {
    if (shape.block_size < 1) return Error{"KV cache: block size must be positive"};
    return create(shape, (positions + shape.block_size - 1) / shape.block_size);
}

KvBlockPool::KvBlockPool(const KvCacheShape& shape, int64_t block_count)
    : shape_(shape),
      block_count_(block_count),
      keys_(static_cast<size_t>(shape.layer_count * block_count * shape.block_bytes())),
      values_(keys_.size()),
      blocks_(static_cast<size_t>(block_count)) {
    free_blocks_.reserve(static_cast<size_t>(block_count));
    for (int64_t b = block_count - 1; b >= 0; --b) free_blocks_.push_back(static_cast<int32_t>(b));
}

std::span<const int32_t> KvBlockPool::block_table(int32_t sequence) const {
    const auto it = block_tables_.find(sequence);
    if (it == block_tables_.end()) return {};
    return it->second;
}

KvCache::LayerStorage KvBlockPool::layer_storage(int64_t layer) {
    const int64_t layer_offset = layer * block_count_ * shape_.block_bytes();
    return {keys_.data() + layer_offset, values_.data() + layer_offset, shape_.block_bytes()};
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

void KvBlockPool::unregister(int32_t block) {
    BlockInfo& info = blocks_[block];
    if (!info.hash) return;
    auto it = hash_to_block_.find(*info.hash);
    if (it != hash_to_block_.end() && it->second == block) hash_to_block_.erase(it);
    info.hash.reset();
    info.tokens.clear();
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

int64_t KvBlockPool::adopt_cached_prefix(int32_t sequence, std::span<const int32_t> tokens) {
    auto& table = block_tables_[sequence];
    auto& hashes = prefix_hashes_[sequence];
    const int64_t block_size = shape_.block_size;
    const int64_t reusable_blocks = (static_cast<int64_t>(tokens.size()) - 1) / block_size;
    uint64_t previous = 0;
    for (int64_t b = 0; b < reusable_blocks; ++b) {
        const auto block_tokens = tokens.subspan(static_cast<size_t>(b * block_size), static_cast<size_t>(block_size));
        const uint64_t hash = chain_hash(previous, block_tokens);
        const auto found = hash_to_block_.find(hash);
        if (found == hash_to_block_.end()) break;
        const int32_t block = found->second;
        if (!std::equal(block_tokens.begin(), block_tokens.end(), blocks_[block].tokens.begin(),
                        blocks_[block].tokens.end()))
            break;  // a hash collision: never reuse a block whose tokens differ
        add_reference(block);
        table.push_back(block);
        hashes.push_back(hash);
        previous = hash;
    }
    return static_cast<int64_t>(table.size()) * block_size;
}

bool KvBlockPool::ensure_capacity(int32_t sequence, int64_t positions) {
    auto& table = block_tables_[sequence];
    const int64_t needed = (positions + shape_.block_size - 1) / shape_.block_size - static_cast<int64_t>(table.size());
    if (needed <= 0) return true;
    if (needed > available_block_count()) return false;
    for (int64_t i = 0; i < needed; ++i) table.push_back(*take_block());
    return true;
}

void KvBlockPool::register_computed(int32_t sequence, std::span<const int32_t> tokens, int64_t computed) {
    auto table_it = block_tables_.find(sequence);
    if (table_it == block_tables_.end()) return;
    const auto& table = table_it->second;
    auto& hashes = prefix_hashes_[sequence];
    const int64_t block_size = shape_.block_size;
    const int64_t full_blocks = std::min<int64_t>(computed / block_size, static_cast<int64_t>(table.size()));
    for (auto b = static_cast<int64_t>(hashes.size()); b < full_blocks; ++b) {
        const auto block_tokens = tokens.subspan(static_cast<size_t>(b * block_size), static_cast<size_t>(block_size));
        const uint64_t hash = chain_hash(hashes.empty() ? 0 : hashes.back(), block_tokens);
        hashes.push_back(hash);
        const int32_t block = table[static_cast<size_t>(b)];
        if (blocks_[block].hash || hash_to_block_.count(hash)) continue;  // already known under this chain
        blocks_[block].hash = hash;
        blocks_[block].tokens.assign(block_tokens.begin(), block_tokens.end());
        hash_to_block_[hash] = block;
    }
}

void KvBlockPool::copy_block(int32_t from, int32_t to) {
    for (int64_t layer = 0; layer < shape_.layer_count; ++layer) {
        const LayerStorage storage = layer_storage(layer);
        std::memcpy(storage.keys + to * storage.block_stride, storage.keys + from * storage.block_stride,
                    static_cast<size_t>(storage.block_stride));
        std::memcpy(storage.values + to * storage.block_stride, storage.values + from * storage.block_stride,
                    static_cast<size_t>(storage.block_stride));
    }
}

bool KvBlockPool::fork(int32_t parent, int32_t child, int64_t positions) {
    const auto parent_it = block_tables_.find(parent);
    if (parent_it == block_tables_.end()) return positions == 0;
    const std::vector<int32_t> parent_table = parent_it->second;  // copy: inserting the child may rehash
    const int64_t full_blocks = positions / shape_.block_size;
    const bool partial = positions % shape_.block_size != 0;
    if (partial && available_block_count() < 1) return false;
    auto& table = block_tables_[child];
    for (int64_t b = 0; b < full_blocks; ++b) {
        add_reference(parent_table[static_cast<size_t>(b)]);
        table.push_back(parent_table[static_cast<size_t>(b)]);
    }
    if (partial) {
        const int32_t copy = *take_block();
        copy_block(parent_table[static_cast<size_t>(full_blocks)], copy);
        table.push_back(copy);
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
    // reachable from its first block.
    for (auto block_it = it->second.rbegin(); block_it != it->second.rend(); ++block_it) {
        const int32_t block = *block_it;
        BlockInfo& info = blocks_[block];
        if (--info.ref_count > 0) continue;
        --used_blocks_;
        if (info.hash) {
            evictable_.push_back(block);
            info.lru_position = std::prev(evictable_.end());
            info.evictable = true;
        } else {
            free_blocks_.push_back(block);
        }
    }
    block_tables_.erase(it);
}

}  // namespace tempered
