// The latent KV layout of multi-head latent attention in the one block pool: sizing without values,
// prefix reuse, and block export / import (staged KV, the PD transfer) byte for byte.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "kernels/cpu/latent_attention.h"
#include "kv/kv_block_pool.h"

namespace tempered {
namespace {
namespace kv_latent_layout_test {

constexpr int64_t kLayers = 3, kWidth = 80, kBlock = 16;

KvCacheShape latent_shape() { return KvCacheShape{kLayers, 1, kWidth, kBlock, DType::F16, {}, true}; }

// Writes row p (every element p + d / 100) of every layer for positions [0, positions) of `sequence`.
void fill(KvBlockPool& pool, int32_t sequence, int64_t positions) {
    std::vector<float> row(kWidth);
    for (int64_t layer = 0; layer < kLayers; ++layer) {
        const KvCache::LayerStorage storage = pool.layer_storage(layer);
        for (int64_t p = 0; p < positions; ++p) {
            for (int64_t d = 0; d < kWidth; ++d) row[d] = static_cast<float>(p) + static_cast<float>(d) / 128.0f;
            const int32_t block = pool.block_table(sequence, layer)[static_cast<size_t>(p / kBlock)];
            store_kv_position(pool.shape(), KvLayerView{storage.keys, nullptr, storage.block_stride}, block, p % kBlock,
                              row.data(), nullptr);
        }
    }
}

std::vector<float> rows_of(KvBlockPool& pool, int32_t sequence, int64_t layer, int64_t positions) {
    const KvCache::LayerStorage storage = pool.layer_storage(layer);
    const LatentCacheView view{storage.keys, storage.block_stride, kBlock, kWidth, DType::F16};
    std::vector<float> rows(static_cast<size_t>(positions * kWidth));
    gather_latent_rows(view, pool.block_table(sequence, layer), 0, positions, rows.data());
    return rows;
}

// FP8: each position's row is kWidth E4M3 codes plus one float scale, per layer: 3 x (80 + 4) bytes.
TEST(KvLatentLayout, Fp8RowIsCodesPlusOneScalePerPosition) {
    KvCacheShape shape = latent_shape();
    shape.type = DType::F8_E4M3;
    EXPECT_EQ(shape.bytes_per_token(), 252);
    EXPECT_EQ(shape.value_block_bytes(), 0);
    EXPECT_EQ(KvBlockPool::pool_block_bytes(shape), kLayers * kBlock * (kWidth + 4));
}

TEST(KvLatentLayout, BlocksHoldTheLatentRowOnly) {
    const KvCacheShape shape = latent_shape();
    EXPECT_EQ(shape.value_block_bytes(), 0);
    EXPECT_EQ(shape.bytes_per_token(), kLayers * kWidth * 2);
    EXPECT_EQ(KvBlockPool::pool_block_bytes(shape), kLayers * kBlock * kWidth * 2);
    KvCacheShape standard = shape;
    standard.latent = false;
    EXPECT_EQ(KvBlockPool::pool_block_bytes(standard), 2 * KvBlockPool::pool_block_bytes(shape));
    auto pool = KvBlockPool::create(shape, 4);
    ASSERT_TRUE(pool.ok());
    EXPECT_EQ((*pool)->layer_storage(0).values, nullptr);
}

TEST(KvLatentLayout, PrefixReuseAndForkKeepTheRows) {
    auto pool = std::move(KvBlockPool::create(latent_shape(), 16).value());
    std::vector<int32_t> tokens(40);
    std::iota(tokens.begin(), tokens.end(), 100);
    ASSERT_TRUE(pool->ensure_capacity(0, 40));
    fill(*pool, 0, 40);
    pool->register_computed(0, tokens, 40);
    EXPECT_EQ(pool->adopt_cached_prefix(1, tokens), 32);
    ASSERT_TRUE(pool->fork(0, 2, 40));  // a partial last block: copied
    for (int64_t layer = 0; layer < kLayers; ++layer) {
        const auto original = rows_of(*pool, 0, layer, 40);
        EXPECT_EQ(rows_of(*pool, 1, layer, 32), std::vector<float>(original.begin(), original.begin() + 32 * kWidth));
        EXPECT_EQ(rows_of(*pool, 2, layer, 40), original);
    }
}

TEST(KvLatentLayout, BlocksMoveBetweenPoolsByteForByte) {
    auto sender = std::move(KvBlockPool::create(latent_shape(), 8).value());
    auto receiver = std::move(KvBlockPool::create(latent_shape(), 8).value());
    ASSERT_TRUE(sender->ensure_capacity(0, 32));
    ASSERT_TRUE(receiver->ensure_capacity(5, 32));
    fill(*sender, 0, 32);
    std::vector<uint8_t> bytes(static_cast<size_t>(KvBlockPool::pool_block_bytes(sender->shape())));
    for (size_t b = 0; b < 2; ++b) {
        sender->read_block(sender->block_table(0)[b], bytes);
        receiver->write_block(receiver->block_table(5)[b], bytes);
    }
    for (int64_t layer = 0; layer < kLayers; ++layer)
        EXPECT_EQ(rows_of(*receiver, 5, layer, 32), rows_of(*sender, 0, layer, 32));
}

}  // namespace kv_latent_layout_test
}  // namespace
}  // namespace tempered
