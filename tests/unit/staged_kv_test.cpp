// stage_kv / unstage_kv: a sequence's blocks leave one pool and land in another pool of the same shape,
// byte for byte, by (layer group, position block); a window group's handed-back blocks neither travel
// nor are asked for; a staged set that lacks a block the receiver needs writes nothing.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "engine_test_support.h"
#include "kv/staged_kv.h"

namespace tempered {
namespace {
namespace staged_kv_test {

std::vector<uint8_t> block_bytes(const KvBlockPool& pool, int32_t block) {
    std::vector<uint8_t> bytes(static_cast<size_t>(KvBlockPool::pool_block_bytes(pool.shape())));
    pool.read_block(block, bytes);
    return bytes;
}

void fill_randomly(KvBlockPool& pool, int32_t sequence, uint32_t seed) {
    std::mt19937 random(seed);
    for (int64_t group = 0; group < pool.layer_groups().group_count(); ++group)
        for (int32_t block : pool.group_table(sequence, group)) {
            if (block < 0) continue;
            std::vector<uint8_t> bytes(static_cast<size_t>(KvBlockPool::pool_block_bytes(pool.shape())));
            for (auto& byte : bytes) byte = static_cast<uint8_t>(random());
            pool.write_block(block, bytes);
        }
}

class StagedKvTest : public ::testing::TestWithParam<bool> {
protected:
    KvCacheShape shape() const { return GetParam() ? testing::tiny_window_kv_shape() : testing::tiny_kv_shape(); }
};

TEST_P(StagedKvTest, BlocksLandByteForByteInTheReceiversOwnBlocks) {
    auto sender = testing::tiny_pool(64, shape());
    auto receiver = testing::tiny_pool(64, shape());
    ASSERT_TRUE(receiver->ensure_capacity(9, 8));  // the receiver's block ids differ from the sender's
    // Grown in two steps, as a prefill in chunks: the window group hands back what position 16 cannot see.
    ASSERT_TRUE(sender->ensure_capacity(1, 16, 0));
    ASSERT_TRUE(sender->ensure_capacity(1, 17, 16));
    fill_randomly(*sender, 1, 7);
    const StagedKv staged = stage_kv(*sender, 1, 0, 17);
    EXPECT_EQ(staged.first_position, 0);
    EXPECT_EQ(staged.end_position, 17);
    EXPECT_EQ(staged.byte_count(), static_cast<int64_t>(staged.blocks.size()) * staged.block_bytes);

    ASSERT_TRUE(receiver->ensure_capacity(5, 16, 0));
    ASSERT_TRUE(receiver->ensure_capacity(5, 17, 16));
    ASSERT_TRUE(unstage_kv(*receiver, 5, staged, 0));
    for (int64_t group = 0; group < sender->layer_groups().group_count(); ++group) {
        const auto theirs = sender->group_table(1, group);
        const auto ours = receiver->group_table(5, group);
        ASSERT_EQ(theirs.size(), ours.size());
        for (size_t b = 0; b < ours.size(); ++b) {
            ASSERT_EQ(ours[b] < 0, theirs[b] < 0) << "group " << group << " block " << b;
            if (ours[b] >= 0) {
                EXPECT_EQ(block_bytes(*receiver, ours[b]), block_bytes(*sender, theirs[b]));
            }
        }
    }
    if (GetParam()) {  // the window group handed back blocks 0 and 1: they did not travel
        EXPECT_EQ(staged.blocks.size(), 5u + 3u);
    }
}

TEST_P(StagedKvTest, StagingFromAPositionSkipsTheBlocksBeforeIt) {
    auto sender = testing::tiny_pool(64, shape());
    ASSERT_TRUE(sender->ensure_capacity(1, 17, 16));
    const StagedKv staged = stage_kv(*sender, 1, 10, 17);  // rounded down to the block at 8
    EXPECT_EQ(staged.first_position, 8);
    for (const StagedKvBlock& block : staged.blocks) EXPECT_GE(block.index, 2);
}

TEST_P(StagedKvTest, AStagedSetLackingANeededBlockWritesNothing) {
    auto sender = testing::tiny_pool(64, shape());
    auto receiver = testing::tiny_pool(64, shape());
    ASSERT_TRUE(sender->ensure_capacity(1, 17, 16));
    fill_randomly(*sender, 1, 3);
    const StagedKv staged = stage_kv(*sender, 1, 8, 17);
    ASSERT_TRUE(receiver->ensure_capacity(5, 17, 0));  // holds every block, wants them from position 0
    fill_randomly(*receiver, 5, 4);
    const auto before = block_bytes(*receiver, receiver->group_table(5, 0).back());
    EXPECT_FALSE(unstage_kv(*receiver, 5, staged, 0));
    EXPECT_EQ(block_bytes(*receiver, receiver->group_table(5, 0).back()), before);
    EXPECT_TRUE(unstage_kv(*receiver, 5, staged, 8));  // from the block at 8 on, all are there
}

INSTANTIATE_TEST_SUITE_P(Shapes, StagedKvTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "WindowGroups" : "OneGroup"; });

}  // namespace staged_kv_test
}  // namespace
}  // namespace tempered
