// Multi-head latent attention: the chunked absorbed kernel against its plain formula, and the absorbed
// form of a whole layer against the expanded form, on random weights and inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/thread_pool.h"
#include "kernel_test_support.h"
#include "kernels/cpu/fp8.h"
#include "kernels/cpu/latent_attention.h"
#include "kernels/cpu/ops.h"
#include "kv/kv_block_pool.h"
#include "models/latent_attention.h"

namespace tempered {
namespace {
namespace latent_attention_test {

std::vector<float> random_floats(size_t n, std::mt19937& rng, float scale = 1.0f) {
    std::normal_distribution<float> normal(0.0f, scale);
    std::vector<float> values(n);
    for (float& v : values) v = normal(rng);
    return values;
}

// A latent cache of `positions` random rows, written through store_kv_position as the model does.
struct RandomLatentCache {
    std::unique_ptr<KvBlockPool> pool;
    std::vector<float> rows;  // (positions, width): what was stored

    RandomLatentCache(int64_t width, int64_t positions, DType type, int64_t block_size, std::mt19937& rng) {
        KvCacheShape shape{1, 1, width, block_size, type, {}, true};
        pool = std::move(KvBlockPool::for_positions(shape, positions).value());
        EXPECT_TRUE(pool->ensure_capacity(0, positions));
        rows = random_floats(static_cast<size_t>(positions * width), rng);
        const KvCache::LayerStorage storage = pool->layer_storage(0);
        for (int64_t p = 0; p < positions; ++p) {
            const int32_t block = pool->block_table(0)[static_cast<size_t>(p / block_size)];
            store_kv_position(shape, KvLayerView{storage.keys, nullptr, storage.block_stride}, block, p % block_size,
                              &rows[static_cast<size_t>(p * width)], nullptr);
        }
    }
    // The slots of the last block past `positions` filled with NaN (every element type's all-ones bytes,
    // and NaN scales): the kernel reads whole chunks there and must mask them.
    void poison_tail(int64_t positions) {
        const LatentCacheView v = view();
        const auto element = static_cast<int64_t>(dtype_traits(v.type).block_bytes);
        const int32_t last = pool->block_table(0)[static_cast<size_t>((positions - 1) / v.block_size)];
        auto* block = const_cast<uint8_t*>(v.data) + static_cast<int64_t>(last) * v.block_stride;
        for (int64_t slot = (positions - 1) % v.block_size + 1; slot < v.block_size; ++slot) {
            for (int64_t d = 0; d < v.width; ++d)
                std::memset(block + (d * v.block_size + slot) * element, 0xFF, static_cast<size_t>(element));
            if (v.type == DType::F8_E4M3) std::memset(block + v.scale_offset + slot * 4, 0xFF, 4);
        }
    }
    LatentCacheView view() {
        const KvCache::LayerStorage storage = pool->layer_storage(0);
        const KvCacheShape& shape = pool->shape();
        return {storage.keys,   storage.block_stride, shape.block_size,
                shape.head_dim, shape.type,           shape.has_scales() ? shape.scale_offset(0, 0) : 0};
    }
};

TEST(LatentAttentionKernel, GathersWhatWasStored) {
    std::mt19937 rng(1);
    RandomLatentCache cache(24, 37, DType::F32, 16, rng);
    std::vector<float> rows(37 * 24);
    gather_latent_rows(cache.view(), cache.pool->block_table(0), 0, 37, rows.data());
    EXPECT_EQ(rows, cache.rows);
    gather_latent_rows(cache.view(), cache.pool->block_table(0), 5, 20, rows.data());
    EXPECT_TRUE(std::equal(rows.begin(), rows.begin() + 20 * 24, cache.rows.begin() + 5 * 24));
}

TEST(LatentAttentionKernel, ChunkedEqualsPlainFormula) {
    const int64_t heads = 5, rank = 32, rope = 8, width = rank + rope;
    for (DType type : {DType::F32, DType::F16, DType::BF16}) {
        for (int64_t block_size : {16, 7}) {
            for (int64_t length : {1, 15, 16, 17, 70}) {
                std::mt19937 rng(static_cast<uint32_t>(length * 31 + block_size));
                RandomLatentCache cache(width, length, type, block_size, rng);
                const std::vector<float> queries = random_floats(static_cast<size_t>(heads * width), rng, 0.3f);
                std::vector<float> scratch(static_cast<size_t>(latent_attention_scratch_floats(heads, width, rank)));
                std::vector<float> out(heads * rank), expected(heads * rank);
                attend_latent(queries.data(), heads, cache.view(), cache.pool->block_table(0), length, rank, 0.2f,
                              scratch.data(), out.data());
                attend_latent_reference(queries.data(), heads, cache.view(), cache.pool->block_table(0), length, rank,
                                        0.2f, expected.data());
                for (size_t i = 0; i < out.size(); ++i)
                    ASSERT_NEAR(out[i], expected[i], 2e-5f) << "type " << dtype_name(type) << " length " << length;
            }
        }
    }
}

// FP8 E4M3: position p's row reads back as its codes times its one scale (max |row| / 448), the bulk
// (dispatched SIMD) conversion equal to the scalar formula, within E4M3's half step of each element.
TEST(LatentAttentionKernel, Fp8RowsAreCodesTimesTheirPositionScale) {
    const int64_t width = 40, positions = 37;
    std::mt19937 rng(3);
    RandomLatentCache cache(width, positions, DType::F8_E4M3, 16, rng);
    std::vector<float> rows(static_cast<size_t>(positions * width));
    gather_latent_rows(cache.view(), cache.pool->block_table(0), 0, positions, rows.data());
    for (int64_t p = 0; p < positions; ++p) {
        const float* stored = &cache.rows[static_cast<size_t>(p * width)];
        float largest = 0.0f;
        for (int64_t d = 0; d < width; ++d) largest = std::max(largest, std::fabs(stored[d]));
        const float scale = largest / kE4m3Max;
        for (int64_t d = 0; d < width; ++d) {
            const float expected = e4m3_to_float(float_to_e4m3(stored[d] / scale)) * scale;
            ASSERT_EQ(rows[static_cast<size_t>(p * width + d)], expected) << p << " " << d;
            ASSERT_NEAR(expected, stored[d], std::max(std::fabs(stored[d]) / 16.0f, largest * 0x1p-10f));
        }
    }
    std::vector<float> tail(static_cast<size_t>(20 * width));  // a gather starting mid-block
    gather_latent_rows(cache.view(), cache.pool->block_table(0), 5, 20, tail.data());
    EXPECT_TRUE(std::equal(tail.begin(), tail.end(), rows.begin() + 5 * width));
}

TEST(LatentAttentionKernel, ChunkedEqualsPlainFormulaOnFp8) {
    const int64_t heads = 5, rank = 32, rope = 8, width = rank + rope;
    for (int64_t block_size : {16, 7}) {
        for (int64_t length : {1, 17, 70}) {
            std::mt19937 rng(static_cast<uint32_t>(length * 17 + block_size));
            RandomLatentCache cache(width, length, DType::F8_E4M3, block_size, rng);
            const std::vector<float> queries = random_floats(static_cast<size_t>(heads * width), rng, 0.3f);
            std::vector<float> scratch(static_cast<size_t>(latent_attention_scratch_floats(heads, width, rank)));
            std::vector<float> out(heads * rank), expected(heads * rank);
            attend_latent(queries.data(), heads, cache.view(), cache.pool->block_table(0), length, rank, 0.2f,
                          scratch.data(), out.data());
            attend_latent_reference(queries.data(), heads, cache.view(), cache.pool->block_table(0), length, rank, 0.2f,
                                    expected.data());
            for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], expected[i], 2e-5f) << "length " << length;
        }
    }
}

// The decode kernel's AVX2 and AVX-512 instantiations give the scalar one's bits, for every cache type,
// blocks that hold whole chunks (16, 32) or not (7), partial last chunks over NaN slots, and widths and
// ranks that are not multiples of 16 (padded inside the kernel).
TEST(LatentAttentionKernel, EveryIsaEqualsScalarBitExactly) {
    const int64_t heads = 6;
    for (auto [rank, rope] : {std::pair<int64_t, int64_t>{32, 8}, {24, 16}, {64, 16}}) {
        const int64_t width = rank + rope;
        for (DType type : {DType::F32, DType::F16, DType::BF16, DType::F8_E4M3}) {
            for (int64_t block_size : {16, 7, 32}) {
                for (int64_t length : {1, 15, 17, 70}) {
                    std::mt19937 rng(static_cast<uint32_t>(length * 13 + block_size + rank));
                    RandomLatentCache cache(width, length, type, block_size, rng);
                    cache.poison_tail(length);
                    const std::vector<float> queries = random_floats(static_cast<size_t>(heads * width), rng, 0.3f);
                    std::vector<float> scratch(
                        static_cast<size_t>(latent_attention_scratch_floats(heads, width, rank)));
                    std::vector<float> scalar(heads * rank), out(heads * rank);
                    attend_latent_with_isa(queries.data(), heads, cache.view(), cache.pool->block_table(0), length,
                                           rank, 0.2f, scratch.data(), scalar.data(), CpuIsa::Scalar);
                    for (float v : scalar) ASSERT_TRUE(std::isfinite(v)) << "the poisoned tail leaked";
                    for (CpuIsa isa : supported_isas()) {
                        std::fill(scratch.begin(), scratch.end(), std::nanf(""));  // nothing read before written
                        attend_latent_with_isa(queries.data(), heads, cache.view(), cache.pool->block_table(0), length,
                                               rank, 0.2f, scratch.data(), out.data(), isa);
                        for (size_t i = 0; i < out.size(); ++i)
                            ASSERT_EQ(std::bit_cast<uint32_t>(out[i]), std::bit_cast<uint32_t>(scalar[i]))
                                << cpu_isa_name(isa) << " " << dtype_name(type) << " block " << block_size << " length "
                                << length << " rank " << rank << " at " << i;
                    }
                }
            }
        }
    }
}

// A random layer: every matrix float32, kv_b built from key_b and value_b as the loader builds it.
struct RandomLayer {
    std::vector<std::vector<float>> storage;
    LatentAttentionWeights weights;

    WeightMatrix matrix(int64_t rows, int64_t cols, std::mt19937& rng) {
        storage.push_back(random_floats(static_cast<size_t>(rows * cols), rng, 1.0f / std::sqrt(float(cols))));
        return WeightMatrix{DType::F32, storage.back().data(), rows, cols};
    }

    RandomLayer(const ModelConfig& config, std::mt19937& rng) {
        storage.reserve(64);
        const LatentAttentionConfig& m = *config.latent_attention;
        const int64_t heads = config.head_count, dim = config.embedding_dim, rank = m.kv_lora_rank;
        weights.query_a = matrix(m.q_lora_rank, dim, rng);
        weights.query_a_norm = random_floats(static_cast<size_t>(m.q_lora_rank), rng);
        weights.query_b = matrix(heads * m.key_dim(), m.q_lora_rank, rng);
        weights.kv_a = matrix(m.latent_width(), dim, rng);
        weights.kv_a_norm = random_floats(static_cast<size_t>(rank), rng);
        weights.output = matrix(dim, heads * m.value_dim, rng);
        std::vector<float> kv_b;
        for (int64_t h = 0; h < heads; ++h) {
            weights.key_b.push_back(matrix(rank, m.nope_dim, rng));
            weights.value_b.push_back(matrix(m.value_dim, rank, rng));
            const float* key = storage[storage.size() - 2].data();
            for (int64_t i = 0; i < m.nope_dim; ++i)
                for (int64_t r = 0; r < rank; ++r) kv_b.push_back(key[r * m.nope_dim + i]);
            kv_b.insert(kv_b.end(), storage.back().begin(), storage.back().end());
        }
        storage.push_back(kv_b);
        weights.kv_b = WeightMatrix{DType::F32, storage.back().data(), heads * (m.nope_dim + m.value_dim), rank};
    }
};

ModelConfig latent_config() {
    ModelConfig config;
    config.architecture = "deepseek2";
    config.layer_count = 1;
    config.embedding_dim = 48;
    config.head_count = 3;
    config.kv_head_count = 1;
    config.context_length = 128;
    config.rms_epsilon = 1e-6f;
    config.latent_attention = LatentAttentionConfig{24, 32, 16, 8, 20};
    config.head_dim = config.latent_attention->key_dim();
    config.rope_dims = 8;
    return config;
}

// Runs `positions` tokens of one sequence in batches of `step` tokens with `form`; the attention outputs.
std::vector<float> run_layer(const ModelConfig& config, const LatentAttentionWeights& weights,
                             const std::vector<float>& inputs, int64_t positions, int64_t step,
                             LatentAttentionForm form, ThreadPool& pool, DType kv_type = DType::F32) {
    auto cache = std::move(KvBlockPool::for_positions(kv_cache_shape(config, kv_type), positions).value());
    EXPECT_TRUE(cache->ensure_capacity(0, positions));
    LatentAttention attention(config, pool);
    attention.set_form(form);
    const int64_t dim = config.embedding_dim, pairs = config.rope_dims / 2;
    std::vector<float> inverse_frequencies;
    for (int64_t i = 0; i < pairs; ++i) inverse_frequencies.push_back(std::pow(10000.0f, -2.0f * i / config.rope_dims));
    std::vector<float> outputs(static_cast<size_t>(positions * dim));
    for (int64_t first = 0; first < positions; first += step) {
        const int64_t count = std::min(step, positions - first);
        Batch batch;
        std::vector<float> cos(count * pairs), sin(count * pairs);
        for (int64_t t = 0; t < count; ++t) {
            batch.add(1, static_cast<int32_t>(first + t), 0, true);
            rope_angles(static_cast<float>(first + t), inverse_frequencies.data(), pairs, &cos[t * pairs],
                        &sin[t * pairs]);
        }
        attention.forward(weights, batch, &inputs[first * dim], cos.data(), sin.data(), *cache, 0,
                          &outputs[first * dim]);
    }
    return outputs;
}

TEST(LatentAttentionLayer, AbsorbedEqualsExpanded) {
    const ModelConfig config = latent_config();
    std::mt19937 rng(7);
    RandomLayer layer(config, rng);
    ThreadPool pool(2);
    const int64_t positions = 40;
    const std::vector<float> inputs = random_floats(static_cast<size_t>(positions * config.embedding_dim), rng);
    const auto expanded = run_layer(config, layer.weights, inputs, positions, 40, LatentAttentionForm::Expanded, pool);
    const auto absorbed = run_layer(config, layer.weights, inputs, positions, 40, LatentAttentionForm::Absorbed, pool);
    const auto decoded = run_layer(config, layer.weights, inputs, positions, 1, LatentAttentionForm::Automatic, pool);
    const auto chunked = run_layer(config, layer.weights, inputs, positions, 13, LatentAttentionForm::Automatic, pool);
    float max_abs = 0.0f;
    for (float v : expanded) max_abs = std::max(max_abs, std::fabs(v));
    ASSERT_GT(max_abs, 0.1f);
    for (size_t i = 0; i < expanded.size(); ++i) {
        ASSERT_NEAR(absorbed[i], expanded[i], 1e-5f * max_abs) << i;
        ASSERT_NEAR(decoded[i], expanded[i], 1e-5f * max_abs) << i;
        ASSERT_NEAR(chunked[i], expanded[i], 1e-5f * max_abs) << i;
    }
}

// A prefill longer than the absorbed form's slice of 64 tokens (150 at once, and 70 then 70 then 10):
// equal to the expanded form, and bit for bit to one token at a time (each token's sums are its own).
TEST(LatentAttentionLayer, AbsorbedPrefillAcrossSlicesEqualsExpandedAndTokenByToken) {
    ModelConfig config = latent_config();
    config.context_length = 256;
    std::mt19937 rng(13);
    RandomLayer layer(config, rng);
    ThreadPool pool(2);
    const int64_t positions = 150;
    const std::vector<float> inputs = random_floats(static_cast<size_t>(positions * config.embedding_dim), rng);
    const auto expanded =
        run_layer(config, layer.weights, inputs, positions, positions, LatentAttentionForm::Expanded, pool);
    const auto decoded = run_layer(config, layer.weights, inputs, positions, 1, LatentAttentionForm::Automatic, pool);
    float max_abs = 0.0f;
    for (float v : expanded) max_abs = std::max(max_abs, std::fabs(v));
    ASSERT_GT(max_abs, 0.1f);
    for (int64_t step : {positions, int64_t{70}}) {
        const auto absorbed =
            run_layer(config, layer.weights, inputs, positions, step, LatentAttentionForm::Automatic, pool);
        for (size_t i = 0; i < expanded.size(); ++i) {
            ASSERT_NEAR(absorbed[i], expanded[i], 1e-5f * max_abs) << "step " << step << ", " << i;
            ASSERT_EQ(absorbed[i], decoded[i]) << "step " << step << ", " << i;
        }
    }
}

// The absorbed form's schedule (whole heads per thread for W_kb and W_vb, a token's heads split over the
// threads when there are fewer tokens than threads) leaves every sum as it is: one thread, two or three
// (as many as heads) give the same bits, one token at a time and 13 at a time.
TEST(LatentAttentionLayer, AbsorbedIsTheSameBitForBitOnAnyThreadCount) {
    const ModelConfig config = latent_config();
    std::mt19937 rng(5);
    RandomLayer layer(config, rng);
    const int64_t positions = 40;
    const std::vector<float> inputs = random_floats(static_cast<size_t>(positions * config.embedding_dim), rng);
    for (int64_t step : {1, 13}) {
        ThreadPool one(1);
        const auto expected =
            run_layer(config, layer.weights, inputs, positions, step, LatentAttentionForm::Absorbed, one);
        for (int threads : {2, 3}) {
            ThreadPool pool(threads);
            const auto got =
                run_layer(config, layer.weights, inputs, positions, step, LatentAttentionForm::Absorbed, pool);
            for (size_t i = 0; i < expected.size(); ++i)
                ASSERT_EQ(got[i], expected[i]) << "step " << step << ", threads " << threads << ", " << i;
        }
    }
}

// On an FP8 cache both forms read the same quantized rows, so they still agree to float tolerance.
TEST(LatentAttentionLayer, AbsorbedEqualsExpandedOnFp8Cache) {
    const ModelConfig config = latent_config();
    std::mt19937 rng(11);
    RandomLayer layer(config, rng);
    ThreadPool pool(2);
    const int64_t positions = 40;
    const std::vector<float> inputs = random_floats(static_cast<size_t>(positions * config.embedding_dim), rng);
    const DType fp8 = DType::F8_E4M3;
    const auto expanded =
        run_layer(config, layer.weights, inputs, positions, 40, LatentAttentionForm::Expanded, pool, fp8);
    const auto decoded =
        run_layer(config, layer.weights, inputs, positions, 1, LatentAttentionForm::Automatic, pool, fp8);
    const auto exact = run_layer(config, layer.weights, inputs, positions, 40, LatentAttentionForm::Expanded, pool);
    float max_abs = 0.0f, max_fp8_error = 0.0f;
    for (float v : expanded) max_abs = std::max(max_abs, std::fabs(v));
    ASSERT_GT(max_abs, 0.1f);
    for (size_t i = 0; i < expanded.size(); ++i) {
        ASSERT_NEAR(decoded[i], expanded[i], 1e-5f * max_abs) << i;
        max_fp8_error = std::max(max_fp8_error, std::fabs(expanded[i] - exact[i]));
    }
    EXPECT_GT(max_fp8_error, 0.0f);  // the cache really was 8-bit
    EXPECT_LT(max_fp8_error, 0.1f * max_abs);
}

}  // namespace latent_attention_test
}  // namespace
}  // namespace tempered
