#include "kv/staged_kv.h"

#include <algorithm>
#include <map>

namespace tempered {

namespace {
// The position blocks [first, end) of a table that cover positions [from, to).
std::pair<int64_t, int64_t> block_range(int64_t from, int64_t to, int64_t block_size, size_t table_size) {
    const int64_t first = from / block_size;
    const int64_t end = std::min<int64_t>((to + block_size - 1) / block_size, static_cast<int64_t>(table_size));
    return {first, end};
}
}  // namespace

StagedKv stage_kv(const KvBlockPool& pool, int32_t sequence, int64_t first, int64_t end) {
    const int64_t block_size = pool.shape().block_size;
    StagedKv staged;
    staged.first_position = first / block_size * block_size;
    staged.end_position = end;
    staged.block_bytes = KvBlockPool::pool_block_bytes(pool.shape());
    for (int64_t group = 0; group < pool.layer_groups().group_count(); ++group) {
        const auto table = pool.group_table(sequence, group);
        const auto [from_block, end_block] = block_range(staged.first_position, end, block_size, table.size());
        for (int64_t b = from_block; b < end_block; ++b) {
            const int32_t block = table[static_cast<size_t>(b)];
            if (block < 0) continue;  // a window handed it back
            staged.blocks.push_back({static_cast<int32_t>(group), b});
            staged.bytes.resize(staged.bytes.size() + static_cast<size_t>(staged.block_bytes));
            pool.read_block(block, std::span(staged.bytes).last(static_cast<size_t>(staged.block_bytes)));
        }
    }
    return staged;
}

bool unstage_kv(KvBlockPool& pool, int32_t sequence, const StagedKv& staged, int64_t from) {
    const int64_t block_size = pool.shape().block_size;
    if (staged.block_bytes != KvBlockPool::pool_block_bytes(pool.shape()) ||
        staged.byte_count() != static_cast<int64_t>(staged.blocks.size()) * staged.block_bytes)
        return false;
    // Where each (group, index) sits in `staged`, then every block we need must be there.
    std::map<std::pair<int32_t, int64_t>, int32_t> slot_of;
    for (size_t slot = 0; slot < staged.blocks.size(); ++slot)
        slot_of.emplace(std::make_pair(staged.blocks[slot].group, staged.blocks[slot].index),
                        static_cast<int32_t>(slot));
    std::vector<std::pair<int32_t, int32_t>> writes;  // (pool block, staged slot)
    for (int64_t group = 0; group < pool.layer_groups().group_count(); ++group) {
        const auto table = pool.group_table(sequence, group);
        const auto [from_block, end_block] = block_range(from, staged.end_position, block_size, table.size());
        for (int64_t b = from_block; b < end_block; ++b) {
            if (table[static_cast<size_t>(b)] < 0) continue;
            const auto it = slot_of.find({static_cast<int32_t>(group), b});
            if (it == slot_of.end()) return false;
            writes.emplace_back(table[static_cast<size_t>(b)], it->second);
        }
    }
    const auto bytes = static_cast<size_t>(staged.block_bytes);
    for (const auto& [block, slot] : writes)
        pool.write_block(block, std::span(staged.bytes).subspan(static_cast<size_t>(slot) * bytes, bytes));
    return true;
}

}  // namespace tempered
