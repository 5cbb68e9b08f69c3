// Sliding-window layers in the paged KV cache: layer groups, blocks handed back as the window slides,
// prefix reuse that needs the window's blocks, fork and release with handed-back entries, and the
// figure for Gemma 3's layer pattern.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <vector>

#include "kv/kv_block_pool.h"
#include "kv/kv_layer_groups.h"

namespace tempered {
namespace {
namespace kv_sliding_window_test {

// Gemma 3's pattern: every sixth layer global, the others a window of `window` positions.
std::vector<int64_t> gemma3_windows(int64_t layers, int64_t window) {
    std::vector<int64_t> windows;
    for (int64_t layer = 0; layer < layers; ++layer) windows.push_back(layer % 6 == 5 ? 0 : window);
    return windows;
}

// Four layers, blocks of 4 positions: layers 0 and 1 attend to the last 6 positions, 2 and 3 to all.
// Two groups of two layers: group 0 is the window group.
constexpr int64_t kWindow = 6;
constexpr int64_t kBlockSize = 4;
KvCacheShape window_shape() { return KvCacheShape{4, 1, 4, kBlockSize, DType::F32, {kWindow, kWindow, 0, 0}}; }
constexpr int64_t kWindowLayer = 0, kGlobalLayer = 2;

std::unique_ptr<KvBlockPool> make_pool(const KvCacheShape& shape, int64_t blocks) {
    auto pool = KvBlockPool::create(shape, blocks);
    EXPECT_TRUE(pool) << (pool ? "" : pool.error().message);
    return std::move(pool.value());
}

std::vector<int32_t> iota_tokens(int n, int start = 100) {
    std::vector<int32_t> tokens(static_cast<size_t>(n));
    std::iota(tokens.begin(), tokens.end(), start);
    return tokens;
}

int64_t live_entries(std::span<const int32_t> table) {
    return std::count_if(table.begin(), table.end(), [](int32_t block) { return block >= 0; });
}

// What the decoder may read for a query at `position` in layer `layer`: every block of its window.
void expect_window_readable(const KvBlockPool& pool, int32_t sequence, int64_t layer, int64_t position) {
    const int64_t window = pool.shape().layer_windows.empty() ? 0 : pool.shape().layer_windows[layer];
    const auto table = pool.block_table(sequence, layer);
    ASSERT_LT(position / kBlockSize, static_cast<int64_t>(table.size()));
    for (int64_t b = first_block_in_window(position, window, kBlockSize); b <= position / kBlockSize; ++b)
        EXPECT_GE(table[static_cast<size_t>(b)], 0) << "layer " << layer << " position " << position << " block " << b;
}

// One engine step as the scheduler and postprocess do it: blocks for the chunk, then registration.
void compute_chunk(KvBlockPool& pool, int32_t sequence, std::span<const int32_t> tokens, int64_t computed,
                   int64_t count) {
    ASSERT_TRUE(pool.ensure_capacity(sequence, computed + count, computed));
    for (int64_t p = computed; p < computed + count; ++p) {
        expect_window_readable(pool, sequence, kWindowLayer, p);
        expect_window_readable(pool, sequence, kGlobalLayer, p);
    }
    pool.register_computed(sequence, tokens, computed + count);
}

TEST(KvLayerGroups, Gemma3PatternMakesOneGlobalAndFiveWindowGroupsOfThree) {
    KvCacheShape shape{18, 1, 8, 16, DType::F16, gemma3_windows(18, 512)};
    const KvLayerGroups groups = kv_layer_groups(shape);
    EXPECT_EQ(groups.layers_per_group, 3);
    ASSERT_EQ(groups.group_count(), 6);
    const int64_t global = groups.group_of_layer[5];
    EXPECT_EQ(groups.group_of_layer[11], global);
    EXPECT_EQ(groups.group_of_layer[17], global);
    EXPECT_FALSE(groups.is_window_group(global));
    for (int64_t group = 0; group < 6; ++group) {
        int64_t members = 0;
        for (int64_t layer = 0; layer < 18; ++layer) members += groups.group_of_layer[layer] == group ? 1 : 0;
        EXPECT_EQ(members, 3) << group;
        EXPECT_EQ(groups.group_window[group], group == global ? 0 : 512);
    }
    EXPECT_EQ(groups.group_of_layer[3], groups.group_of_layer[4]);  // {3, 4, 6}: the window layers in order
    EXPECT_EQ(groups.group_of_layer[4], groups.group_of_layer[6]);
    EXPECT_EQ(groups.slot_of_layer[6], 2);
}

TEST(KvLayerGroups, AllGlobalLayersAreOneGroupInLayerOrder) {
    for (const auto& windows : {std::vector<int64_t>{}, std::vector<int64_t>(5, 0)}) {
        const KvLayerGroups groups = kv_layer_groups(KvCacheShape{5, 2, 8, 16, DType::F16, windows});
        EXPECT_EQ(groups.layers_per_group, 5);
        EXPECT_EQ(groups.group_count(), 1);
        for (int64_t layer = 0; layer < 5; ++layer) EXPECT_EQ(groups.slot_of_layer[layer], layer);
    }
}

TEST(KvLayerGroups, TheFirstBlockAWindowReachesFollowsItsExactBoundary) {
    // A query at p attends to p-W+1..p: at 9 with W = 6 that is 4..9, from block 1 on.
    EXPECT_EQ(first_block_in_window(9, 6, 4), 1);
    EXPECT_EQ(first_block_in_window(8, 6, 4), 0);   // 3..8: block 0 holds 3
    EXPECT_EQ(first_block_in_window(10, 6, 4), 1);  // 5..10
    EXPECT_EQ(first_block_in_window(13, 6, 4), 2);  // 8..13
    EXPECT_EQ(first_block_in_window(100, 0, 4), 0);
}

TEST(KvSlidingWindow, AGlobalPoolKeepsTodaysLayout) {
    auto pool = make_pool(KvCacheShape{3, 1, 4, 4, DType::F32}, 5);
    const int64_t layer_bytes = 5 * pool->shape().block_bytes();
    for (int64_t layer = 0; layer < 3; ++layer) {
        EXPECT_EQ(pool->layer_storage(layer).keys - pool->layer_storage(0).keys, layer * layer_bytes);
        EXPECT_EQ(pool->layer_storage(layer).block_stride, pool->shape().block_bytes());
    }
    EXPECT_EQ(KvBlockPool::pool_block_bytes(pool->shape()), 2 * 3 * pool->shape().block_bytes());
    EXPECT_EQ(KvBlockPool::blocks_for_positions(pool->shape(), 9), 3);
}

TEST(KvSlidingWindow, LayersOfOneGroupShareATableAndGetTheirOwnSlice) {
    auto pool = make_pool(window_shape(), 8);
    ASSERT_TRUE(pool->ensure_capacity(1, 5));
    EXPECT_EQ(pool->block_table(1, 0).data(), pool->block_table(1, 1).data());
    EXPECT_NE(pool->block_table(1, 0).data(), pool->block_table(1, 2).data());
    EXPECT_EQ(pool->used_block_count(), 4);  // two entries in each of the two groups
    EXPECT_NE(pool->layer_storage(0).keys, pool->layer_storage(1).keys);
    EXPECT_EQ(pool->layer_storage(0).keys, pool->layer_storage(2).keys);  // slot 0 of different groups
    EXPECT_EQ(KvBlockPool::blocks_for_positions(window_shape(), 9), 6);
    EXPECT_EQ(KvBlockPool::pool_block_bytes(window_shape()), 2 * 2 * window_shape().block_bytes());
    EXPECT_FALSE(KvBlockPool::create(KvCacheShape{4, 1, 4, 4, DType::F32, {6, 0}}, 8));  // a window per layer
    EXPECT_FALSE(KvBlockPool::create(KvCacheShape{2, 1, 4, 4, DType::F32, {-1, 0}}, 8));
}

TEST(KvSlidingWindow, DecodingHandsBackTheBlocksTheWindowLeaves) {
    auto pool = make_pool(window_shape(), 32);
    const auto tokens = iota_tokens(60);
    compute_chunk(*pool, 1, tokens, 0, 4);
    for (int64_t computed = 4; computed < 60; ++computed) {
        compute_chunk(*pool, 1, tokens, computed, 1);
        const auto window_table = pool->block_table(1, kWindowLayer);
        const int64_t first = first_block_in_window(computed, kWindow, kBlockSize);
        for (int64_t b = 0; b < first; ++b) EXPECT_EQ(window_table[b], -1) << computed << " " << b;
        const int64_t entries = computed / kBlockSize + 1;
        EXPECT_EQ(live_entries(window_table), entries - first) << computed;
        EXPECT_LE(live_entries(window_table), (kWindow + kBlockSize - 1) / kBlockSize + 1);
        EXPECT_EQ(live_entries(pool->block_table(1, kGlobalLayer)), entries);
        EXPECT_EQ(pool->used_block_count(), entries + entries - first) << computed;
    }
    // 15 full blocks in each group, all registered: the 13 window blocks handed back are cached, not lost.
    EXPECT_EQ(live_entries(pool->block_table(1, kWindowLayer)), 2);
    EXPECT_EQ(pool->cached_block_count(), 15 + 15);
    EXPECT_EQ(pool->available_block_count(), 32 - pool->used_block_count());
    pool->release(1);
    EXPECT_EQ(pool->used_block_count(), 0);
    EXPECT_EQ(pool->available_block_count(), 32);
}

TEST(KvSlidingWindow, AChunkedPrefillHandsBackAsItGoes) {
    auto pool = make_pool(window_shape(), 16);
    const auto tokens = iota_tokens(40);
    // Chunks of 8: a chunk from c needs window blocks from the one holding c - 5 to its end, so
    // [8, 16) still needs block 0 (position 3) and later chunks hand back two blocks as they take four.
    const int64_t expected_window_blocks[] = {2, 4, 4, 4, 4};
    const int64_t expected_needed[] = {4, 4, 2, 2, 2};
    for (int64_t chunk = 0; chunk < 5; ++chunk) {
        const int64_t computed = chunk * 8;
        EXPECT_EQ(pool->blocks_needed(1, computed + 8, computed), expected_needed[chunk]) << chunk;
        compute_chunk(*pool, 1, tokens, computed, 8);
        EXPECT_EQ(live_entries(pool->block_table(1, kWindowLayer)), expected_window_blocks[chunk]) << chunk;
        EXPECT_EQ(pool->used_block_count(), (computed + 8) / kBlockSize + expected_window_blocks[chunk]);
    }
    // 10 global + 4 window blocks where a cache without windows would hold 20.
    EXPECT_EQ(pool->used_block_count(), 14);
}

TEST(KvSlidingWindow, APrefixHitNeedsTheBlocksTheWindowReachesFromWhereItStarts) {
    auto pool = make_pool(window_shape(), 16);
    const auto tokens = iota_tokens(25);
    for (int64_t computed = 0; computed < 24; computed += 4) compute_chunk(*pool, 1, tokens, computed, 4);
    ASSERT_TRUE(pool->ensure_capacity(1, 24, 24));  // its next query is at 24: window block 3 goes too
    // Sequence 1 holds global blocks 0..5 and window blocks 4, 5 (from 19 on); window blocks 0..3 were
    // handed back, registered, so they are cached until the pool needs room.
    EXPECT_EQ(pool->used_block_count(), 6 + 2);
    EXPECT_EQ(pool->adopt_cached_prefix(2, tokens), 24);
    EXPECT_EQ(pool->block_table(2, kWindowLayer)[0], -1);  // not needed from position 24 on
    EXPECT_EQ(pool->block_table(2, kWindowLayer)[4], pool->block_table(1, kWindowLayer)[4]);
    pool->release(2);
    // Another sequence takes every free block, then the cached window blocks 0..3 (oldest first).
    ASSERT_TRUE(pool->ensure_capacity(3, 4 * kBlockSize));
    EXPECT_EQ(pool->available_block_count(), 0);
    // The whole prompt is still usable: its window's blocks 4 and 5 are in use by sequence 1.
    EXPECT_EQ(pool->adopt_cached_prefix(4, tokens), 24);
    // A shorter prompt is not: from position 12 the window reaches back to block 1, evicted, and so on
    // down to nothing, although the global group still has every block of it.
    EXPECT_EQ(pool->adopt_cached_prefix(5, std::span(tokens).first(13)), 0);
    EXPECT_TRUE(pool->block_table(5, kGlobalLayer).empty());
}

TEST(KvSlidingWindow, ForkCopiesHandedBackEntriesAsHandedBack) {
    auto pool = make_pool(window_shape(), 16);
    const auto tokens = iota_tokens(14);
    compute_chunk(*pool, 1, tokens, 0, 12);
    compute_chunk(*pool, 1, tokens, 12, 2);  // from 12 the window reaches back to block 1
    ASSERT_EQ(pool->block_table(1, kWindowLayer)[0], -1);
    const int64_t used = pool->used_block_count();  // 4 global + 3 window
    EXPECT_EQ(used, 7);
    ASSERT_TRUE(pool->fork(1, 2, 14));
    EXPECT_EQ(pool->block_table(2, kWindowLayer)[0], -1);
    EXPECT_EQ(pool->block_table(2, kWindowLayer)[1], pool->block_table(1, kWindowLayer)[1]);
    EXPECT_NE(pool->block_table(2, kWindowLayer)[3], pool->block_table(1, kWindowLayer)[3]);  // partial: copied
    EXPECT_NE(pool->block_table(2, kGlobalLayer)[3], pool->block_table(1, kGlobalLayer)[3]);
    EXPECT_EQ(pool->used_block_count(), used + 2);  // one copied partial block per group
    // The child decodes on: its window slides on its own blocks.
    compute_chunk(*pool, 2, tokens, 14, 0);
    EXPECT_EQ(pool->block_table(2, kWindowLayer)[1], -1);
    EXPECT_GE(pool->block_table(1, kWindowLayer)[1], 0);
    EXPECT_EQ(pool->used_block_count(), used + 2);  // block 1 is still the parent's
    // Forking behind the parent's window: its partial window block was handed back, so -1 too.
    ASSERT_TRUE(pool->fork(1, 3, 2));
    EXPECT_EQ(pool->block_table(3, kWindowLayer)[0], -1);
    EXPECT_GE(pool->block_table(3, kGlobalLayer)[0], 0);
    EXPECT_EQ(pool->used_block_count(), used + 3);  // the global partial block, copied
    pool->release(3);
    pool->release(1);
    pool->release(2);
    EXPECT_EQ(pool->used_block_count(), 0);
}

TEST(KvSlidingWindow, BlocksNeededIsNetOfTheBlocksHandedBackThatNobodyElseHolds) {
    auto pool = make_pool(window_shape(), 16);
    const auto tokens = iota_tokens(16);
    compute_chunk(*pool, 1, tokens, 0, 12);
    // To 16 from 12: one new entry in each group, window block 0 handed back.
    EXPECT_EQ(pool->blocks_needed(1, 16, 12), 2 - 1);
    EXPECT_EQ(pool->blocks_needed(1, 12, 19), -3);  // nothing new; from 19 window blocks 0..2 are out of reach
    ASSERT_TRUE(pool->fork(1, 2, 12));              // shares every block: handing them back frees nothing
    EXPECT_EQ(pool->blocks_needed(1, 16, 12), 2);
    EXPECT_EQ(pool->blocks_needed(1, 12, 19), 0);
}

// The must-show figure: one 2,000-token sequence with Gemma 3's pattern, blocks of 16 positions.
TEST(KvSlidingWindow, Gemma3SequenceOf2000TokensHoldsItsWindowNotItsLength) {
    const int64_t layers = 18, window = 512, block_size = 16, length = 2000;
    const KvCacheShape window_model{layers, 1, 8, block_size, DType::F16, gemma3_windows(layers, window)};
    const KvCacheShape global_model{layers, 1, 8, block_size, DType::F16};
    auto windowed = make_pool(window_model, KvBlockPool::blocks_for_positions(window_model, length));
    auto global = make_pool(global_model, KvBlockPool::blocks_for_positions(global_model, length));
    // Prefill 1,000 tokens in chunks of 512, then decode to 2,000 positions, as the scheduler would.
    int64_t most_held = 0, held_at_length = 0, global_held = 0;
    for (int64_t computed = 0; computed < length - 1;) {
        const int64_t count = computed < 1000 ? std::min<int64_t>(512, 1000 - computed) : 1;
        ASSERT_TRUE(windowed->ensure_capacity(0, computed + count, computed));
        ASSERT_TRUE(global->ensure_capacity(0, computed + count, computed));
        computed += count;
        if (computed > 1000) most_held = std::max(most_held, windowed->used_block_count());
        if (computed == length - 1) {  // the step that computes position 1998
            held_at_length = windowed->used_block_count();
            global_held = global->used_block_count();
        }
    }
    // Global group: 125 blocks for 2,000 positions; each window group: 512 positions + one block = 33.
    EXPECT_EQ(held_at_length, 125 + 5 * 33);
    EXPECT_EQ(most_held, 125 + 5 * 33);  // never more while decoding
    // The all-global cache holds 125 blocks of 18 layers: 6 x 125 blocks of 3 layers, 750.
    const int64_t global_in_group_blocks = global_held * layers / windowed->layer_groups().layers_per_group;
    EXPECT_EQ(global_in_group_blocks, 750);
    EXPECT_EQ(global_held * KvBlockPool::pool_block_bytes(global_model),
              global_in_group_blocks * KvBlockPool::pool_block_bytes(window_model));
    std::printf(
        "Gemma 3 pattern (18 layers, every 6th global, W = 512, blocks of 16), one 2,000-token sequence: "
        "%lld blocks of 3 layers held (3 global layers x 2,000 + 15 window layers x 528 positions) vs %lld "
        "for all-global attention (18 x 2,000), %.1f%%\n",
        static_cast<long long>(held_at_length), static_cast<long long>(global_in_group_blocks),
        100.0 * static_cast<double>(held_at_length) / static_cast<double>(global_in_group_blocks));
}

}  // namespace kv_sliding_window_test
}  // namespace
}  // namespace tempered
