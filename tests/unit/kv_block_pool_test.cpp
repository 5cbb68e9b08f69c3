#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "kv/kv_block_pool.h"

namespace tempered {
namespace {
namespace kv_block_pool_test {

KvCacheShape small_shape() { return KvCacheShape{2, 1, 4, 4, DType::F32}; }

std::unique_ptr<KvBlockPool> make_pool(int64_t blocks) {
    auto pool = KvBlockPool::create(small_shape(), blocks);
    EXPECT_TRUE(pool);
    return std::move(pool.value());
}

std::vector<int32_t> iota_tokens(int n, int start = 100) {
    std::vector<int32_t> tokens(static_cast<size_t>(n));
    std::iota(tokens.begin(), tokens.end(), start);
    return tokens;
}

TEST(KvBlockPool, AllocatesAndReleases) {
    auto pool = make_pool(8);
    EXPECT_TRUE(pool->ensure_capacity(1, 9));  // 3 blocks of 4
    EXPECT_EQ(pool->block_table(1).size(), 3u);
    EXPECT_EQ(pool->used_block_count(), 3);
    EXPECT_FALSE(pool->ensure_capacity(2, 24));  // 6 more blocks: only 5 free
    EXPECT_TRUE(pool->block_table(2).empty());
    pool->release(1);
    EXPECT_EQ(pool->used_block_count(), 0);
    EXPECT_EQ(pool->available_block_count(), 8);
}

TEST(KvBlockPool, GrowsASequenceAndHandsReleasedBlocksToOthers) {
    auto created = KvBlockPool::create(KvCacheShape{1, 1, 8, 4, DType::F16}, 3);
    ASSERT_TRUE(created);
    KvBlockPool& pool = *created.value();
    EXPECT_TRUE(pool.ensure_capacity(0, 5));  // 2 blocks
    EXPECT_EQ(pool.block_table(0).size(), 2u);
    EXPECT_EQ(pool.capacity(0), 8);
    EXPECT_FALSE(pool.ensure_capacity(1, 9));  // needs 3, 1 free
    EXPECT_TRUE(pool.block_table(1).empty());
    EXPECT_TRUE(pool.ensure_capacity(1, 4));
    EXPECT_EQ(pool.available_block_count(), 0);
    pool.release(0);
    EXPECT_EQ(pool.available_block_count(), 2);
    EXPECT_TRUE(pool.ensure_capacity(1, 12));  // grows from 1 block to 3
    EXPECT_EQ(pool.block_table(1).size(), 3u);
}

TEST(KvBlockPool, RejectsQuantizedTypesAndEmptyDimensions) {
    EXPECT_FALSE(KvBlockPool::create(KvCacheShape{1, 1, 8, 4, DType::Q8_0}, 3));
    EXPECT_FALSE(KvBlockPool::create(KvCacheShape{1, 1, 8, 0, DType::F16}, 3));
    EXPECT_FALSE(KvBlockPool::create(small_shape(), 0));
    EXPECT_FALSE(KvBlockPool::for_positions(KvCacheShape{1, 1, 8, 0, DType::F16}, 16));
}

TEST(KvBlockPool, ForPositionsHoldsOneSequenceOfThatLength) {
    auto pool = KvBlockPool::for_positions(small_shape(), 9);  // 3 blocks of 4
    ASSERT_TRUE(pool);
    EXPECT_EQ(pool.value()->block_count(), 3);
    EXPECT_TRUE(pool.value()->ensure_capacity(0, 12));
    EXPECT_FALSE(pool.value()->ensure_capacity(1, 1));
}

TEST(KvBlockPool, ReusesRegisteredPrefixAndLeavesOneTokenToCompute) {
    auto pool = make_pool(16);
    const auto prompt = iota_tokens(10);
    ASSERT_EQ(pool->adopt_cached_prefix(1, prompt), 0);
    ASSERT_TRUE(pool->ensure_capacity(1, 10));
    pool->register_computed(1, prompt, 10);
    EXPECT_EQ(pool->cached_block_count(), 2);  // two full blocks of 4
    // Same prompt: both full blocks are reused, shared with the first sequence.
    EXPECT_EQ(pool->adopt_cached_prefix(2, prompt), 8);
    EXPECT_EQ(pool->block_table(2)[0], pool->block_table(1)[0]);
    // A prompt of exactly 8 tokens reuses only the first block: the last token must be computed.
    EXPECT_EQ(pool->adopt_cached_prefix(3, std::span(prompt).first(8)), 4);
    // A prompt that differs in its first block reuses nothing.
    auto other = prompt;
    other[1] = 7;
    EXPECT_EQ(pool->adopt_cached_prefix(4, other), 0);
}

TEST(KvBlockPool, CachedBlocksSurviveReleaseUntilEvictedTailFirst) {
    auto pool = make_pool(4);
    const auto prompt = iota_tokens(13);
    ASSERT_TRUE(pool->ensure_capacity(1, 13));
    pool->register_computed(1, prompt, 13);
    pool->release(1);
    EXPECT_EQ(pool->used_block_count(), 0);
    EXPECT_EQ(pool->cached_block_count(), 3);
    EXPECT_EQ(pool->available_block_count(), 4);
    // Needing two blocks takes the free one, then evicts the prefix's last cached block.
    ASSERT_TRUE(pool->ensure_capacity(2, 8));
    EXPECT_EQ(pool->cached_block_count(), 2);
    EXPECT_EQ(pool->adopt_cached_prefix(3, prompt), 8);
}

TEST(KvBlockPool, DropUnusedCachedBlocksForgetsOnlyThoseNobodyHolds) {
    auto pool = make_pool(8);
    const auto released = iota_tokens(9, 100);  // two full blocks, then released
    const auto held = iota_tokens(9, 500);      // two full blocks, still running
    ASSERT_TRUE(pool->ensure_capacity(1, 9));
    pool->register_computed(1, released, 9);
    pool->release(1);
    ASSERT_TRUE(pool->ensure_capacity(2, 9));
    pool->register_computed(2, held, 9);
    ASSERT_EQ(pool->cached_block_count(), 4);

    EXPECT_EQ(pool->drop_unused_cached_blocks(), 2);
    EXPECT_EQ(pool->cached_block_count(), 2);
    EXPECT_EQ(pool->used_block_count(), 3);
    EXPECT_EQ(pool->available_block_count(), 5);
    EXPECT_EQ(pool->adopt_cached_prefix(3, released), 0);  // forgotten
    EXPECT_EQ(pool->adopt_cached_prefix(4, held), 8);      // still shared with sequence 2
    EXPECT_EQ(pool->drop_unused_cached_blocks(), 0);
    // Every dropped block can be handed out again: 5 available, the held ones untouched.
    EXPECT_TRUE(pool->ensure_capacity(5, 20));
    EXPECT_EQ(pool->available_block_count(), 0);
}

TEST(KvBlockPool, ForkSharesFullBlocksAndCopiesThePartialOne) {
    auto pool = make_pool(8);
    ASSERT_TRUE(pool->ensure_capacity(1, 6));
    auto storage = pool->layer_storage(1);
    const int32_t partial_block = pool->block_table(1)[1];
    storage.keys[partial_block * storage.block_stride] = 42;
    ASSERT_TRUE(pool->fork(1, 2, 6));
    ASSERT_EQ(pool->block_table(2).size(), 2u);
    EXPECT_EQ(pool->block_table(2)[0], pool->block_table(1)[0]);
    const int32_t copied = pool->block_table(2)[1];
    EXPECT_NE(copied, partial_block);
    EXPECT_EQ(storage.keys[copied * storage.block_stride], 42);
    EXPECT_EQ(pool->used_block_count(), 3);
    pool->release(1);
    pool->release(2);
    EXPECT_EQ(pool->used_block_count(), 0);
}

}  // namespace kv_block_pool_test
}  // namespace
}  // namespace tempered
