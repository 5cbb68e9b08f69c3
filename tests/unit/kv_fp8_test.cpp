// The F8_E4M3 KV cache (kv/kv_fp8.h): what store_kv_position writes reads back (gather_key, read_value)
// within E4M3's rounding of each head vector scaled to its own largest element; the scales live in the
// block, so a block copy carries them and a position's bytes depend on nothing but that position; and
// the byte sizes the pool allocates.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/fp8.h"
#include "kernels/cpu/ops.h"
#include "kv/kv_cache.h"
#include "kv/kv_fp8.h"

namespace tempered {
namespace {
namespace kv_fp8_test {

constexpr int64_t kKvHeads = 3, kHeadDim = 64, kBlockSize = 16;

KvCacheShape fp8_shape() { return KvCacheShape{1, kKvHeads, kHeadDim, kBlockSize, DType::F8_E4M3}; }

KvHeadView head_view(const KvCacheShape& shape, const std::vector<uint8_t>& keys, const std::vector<uint8_t>& values,
                     int64_t kv_head) {
    return KvHeadView{keys.data() + shape.key_offset(0, kv_head, 0),
                      values.data() + shape.value_offset(0, kv_head, 0),
                      shape.block_bytes(),
                      shape.slot_bytes(),
                      shape.block_size,
                      shape.type,
                      keys.data() + shape.scale_offset(0, kv_head),
                      values.data() + shape.scale_offset(0, kv_head)};
}

std::vector<float> random_vector(int64_t n, float spread, std::mt19937& rng) {
    std::normal_distribution<float> normal(0.0f, spread);
    std::vector<float> x(static_cast<size_t>(n));
    for (auto& v : x) v = normal(rng);
    return x;
}

// E4M3 keeps 3 mantissa bits: a normal is within 2^-4 of itself, relative; below the smallest normal
// (2^-6 of the scale's units) the step is 2^-9 units, so the error is at most half of it.
void expect_e4m3_close(const float* original, const float* stored, int64_t n, const char* what) {
    float largest = 0.0f;
    for (int64_t i = 0; i < n; ++i) largest = std::max(largest, std::fabs(original[i]));
    const float scale = largest / kE4m3Max;
    for (int64_t i = 0; i < n; ++i) {
        const float bound = std::max(std::fabs(original[i]) * 0x1p-4f, scale * 0x1p-10f) * 1.0001f;
        EXPECT_LE(std::fabs(stored[i] - original[i]), bound) << what << " element " << i << " " << original[i];
    }
}

TEST(KvFp8, StoredPositionsReadBackWithinE4m3Rounding) {
    const KvCacheShape shape = fp8_shape();
    std::vector<uint8_t> keys(static_cast<size_t>(2 * shape.block_bytes())), values(keys.size());
    std::mt19937 rng(4);
    std::vector<std::vector<float>> stored_keys, stored_values;
    for (int64_t slot = 0; slot < kBlockSize; ++slot) {  // spreads from tiny to large: the scale follows
        const float spread = std::ldexp(1.0f, static_cast<int>(slot) - 8);
        stored_keys.push_back(random_vector(kKvHeads * kHeadDim, spread, rng));
        stored_values.push_back(random_vector(kKvHeads * kHeadDim, spread, rng));
        store_kv_position(shape, KvLayerView{keys.data(), values.data(), shape.block_bytes()}, 1, slot,
                          stored_keys.back().data(), stored_values.back().data());
    }
    std::vector<float> read(kHeadDim);
    for (int64_t slot = 0; slot < kBlockSize; ++slot) {
        for (int64_t h = 0; h < kKvHeads; ++h) {
            const KvHeadView view = head_view(shape, keys, values, h);
            gather_key(view, 1, slot, kHeadDim, read.data());
            expect_e4m3_close(&stored_keys[static_cast<size_t>(slot)][static_cast<size_t>(h * kHeadDim)], read.data(),
                              kHeadDim, "key");
            read_value(view, 1, slot, kHeadDim, read.data());
            expect_e4m3_close(&stored_values[static_cast<size_t>(slot)][static_cast<size_t>(h * kHeadDim)], read.data(),
                              kHeadDim, "value");
        }
    }
}

TEST(KvFp8, AnAllZeroVectorStoresZeroScaleAndCodes) {
    std::vector<float> zeros(kHeadDim, 0.0f);
    std::vector<uint8_t> codes(kHeadDim, 0xAB);
    EXPECT_EQ(quantize_e4m3_vector(zeros.data(), kHeadDim, codes.data()), 0.0f);
    for (uint8_t code : codes) EXPECT_EQ(code, 0);
}

TEST(KvFp8, TheLargestElementTakesTheLargestCode) {
    std::mt19937 rng(5);
    std::vector<float> x = random_vector(kHeadDim, 3.0f, rng);
    x[7] = -50.0f;
    std::vector<uint8_t> codes(kHeadDim);
    const float scale = quantize_e4m3_vector(x.data(), kHeadDim, codes.data());
    EXPECT_EQ(scale, 50.0f / 448.0f);
    EXPECT_EQ(codes[7], 0xFE);  // -448
}

// A position's bytes (codes and scales) depend only on its own keys and values: stored alone into a
// fresh block, or among others, they are the same; and a copy of the block's bytes reads the same.
TEST(KvFp8, PositionsAreIndependentAndBlockCopiesCarryTheirScales) {
    const KvCacheShape shape = fp8_shape();
    const int64_t block_bytes = shape.block_bytes();
    std::vector<uint8_t> crowded_keys(static_cast<size_t>(2 * block_bytes)), crowded_values(crowded_keys.size());
    std::vector<uint8_t> alone_keys(crowded_keys.size()), alone_values(crowded_keys.size());
    std::mt19937 rng(6);
    std::vector<float> key5, value5;
    for (int64_t slot = 0; slot < kBlockSize; ++slot) {
        std::vector<float> key = random_vector(kKvHeads * kHeadDim, 1.0f + static_cast<float>(slot), rng);
        std::vector<float> value = random_vector(kKvHeads * kHeadDim, 1.0f, rng);
        store_kv_position(shape, KvLayerView{crowded_keys.data(), crowded_values.data(), block_bytes}, 0, slot,
                          key.data(), value.data());
        if (slot == 5) key5 = key, value5 = value;
    }
    store_kv_position(shape, KvLayerView{alone_keys.data(), alone_values.data(), block_bytes}, 0, 5, key5.data(),
                      value5.data());
    for (int64_t h = 0; h < kKvHeads; ++h) {
        for (int64_t d = 0; d < kHeadDim; ++d) {
            EXPECT_EQ(crowded_keys[static_cast<size_t>(shape.key_offset(5, h, d))],
                      alone_keys[static_cast<size_t>(shape.key_offset(5, h, d))]);
            EXPECT_EQ(crowded_values[static_cast<size_t>(shape.value_offset(5, h, d))],
                      alone_values[static_cast<size_t>(shape.value_offset(5, h, d))]);
        }
        EXPECT_EQ(std::memcmp(&crowded_keys[static_cast<size_t>(shape.scale_offset(5, h))],
                              &alone_keys[static_cast<size_t>(shape.scale_offset(5, h))], 4),
                  0);
    }
    // Block 0 copied byte for byte into block 1 reads back the same floats.
    std::memcpy(&crowded_keys[static_cast<size_t>(block_bytes)], crowded_keys.data(), static_cast<size_t>(block_bytes));
    std::memcpy(&crowded_values[static_cast<size_t>(block_bytes)], crowded_values.data(),
                static_cast<size_t>(block_bytes));
    std::vector<float> original(kHeadDim), copied(kHeadDim);
    for (int64_t h = 0; h < kKvHeads; ++h) {
        const KvHeadView view = head_view(shape, crowded_keys, crowded_values, h);
        for (int64_t slot = 0; slot < kBlockSize; ++slot) {
            gather_key(view, 0, slot, kHeadDim, original.data());
            gather_key(view, 1, slot, kHeadDim, copied.data());
            EXPECT_EQ(original, copied);
            read_value(view, 0, slot, kHeadDim, original.data());
            read_value(view, 1, slot, kHeadDim, copied.data());
            EXPECT_EQ(original, copied);
        }
    }
}

// SmolLM2-135M's shape: 30 layers, 3 KV heads of 64. Per position and layer f16 stores 2 * 192 halves;
// FP8 2 * 192 codes plus 2 * 3 float scales: 408 bytes against 768, 53%.
TEST(KvFp8, BytesPerTokenCountKeysValuesAndScales) {
    KvCacheShape shape{30, 3, 64, 16, DType::F16};
    EXPECT_EQ(shape.block_bytes(), 16 * 3 * 64 * 2);
    EXPECT_EQ(shape.bytes_per_token(), 30 * 768);
    shape.type = DType::F8_E4M3;
    EXPECT_EQ(shape.block_bytes(), 16 * 3 * 64 + 16 * 3 * 4);
    EXPECT_EQ(shape.bytes_per_token(), 30 * 408);
    shape.type = DType::F32;
    EXPECT_EQ(shape.bytes_per_token(), 30 * 1536);
    EXPECT_TRUE(kv_type_supported(DType::F8_E4M3));
}

}  // namespace kv_fp8_test
}  // namespace
}  // namespace tempered
