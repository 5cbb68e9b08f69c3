// attend_run (kernels/cpu/attention.h): the scalar instantiation equals the causal attention formula,
// evaluated in double, over a shuffled paged layout; AVX2 and AVX-512 equal the scalar one bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/half.h"
#include "kernel_test_support.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/fast_exp.h"
#include "kv/kv_cache.h"

namespace tempered {
namespace {
namespace attention_test {

TEST(Attention, CanonicalExpIsWithinTwoUlpOfExp) {
    for (float x = -86.99f; x <= 10.0f; x += 0.01234f) {
        const double expected = std::exp(static_cast<double>(x));
        EXPECT_NEAR(canonical_exp(x), expected, 2.5e-7 * expected) << x;
    }
    EXPECT_EQ(canonical_exp(0.0f), 1.0f);
    EXPECT_EQ(canonical_exp(-std::numeric_limits<float>::infinity()), 0.0f);
    EXPECT_EQ(canonical_exp(-87.5f), 0.0f);
}

// One layer of a paged cache holding `length` positions of kv_heads heads; the tests read KV head 1.
struct PagedLayer {
    static constexpr int64_t kKvHeads = 2;
    DType type;
    int64_t head_dim, block_size, length;
    std::vector<int32_t> block_table;
    std::vector<uint8_t> keys, values;
    std::vector<float> stored_keys, stored_values;  // (length, head_dim) of KV head 1, as the cache rounds them

    int64_t slot_bytes() const { return shape().slot_bytes(); }
    int64_t block_bytes() const { return shape().block_bytes(); }  // with F8_E4M3's scales
    KvCacheShape shape() const { return KvCacheShape{1, kKvHeads, head_dim, block_size, type}; }
    KvHeadView view() const {
        return KvHeadView{keys.data() + shape().key_offset(0, 1, 0),
                          values.data() + shape().value_offset(0, 1, 0),
                          block_bytes(),
                          slot_bytes(),
                          block_size,
                          type,
                          keys.data() + shape().scale_offset(0, 1),
                          values.data() + shape().scale_offset(0, 1)};
    }
};

PagedLayer make_layer(DType type, int64_t head_dim, int64_t block_size, int64_t length, std::mt19937& rng) {
    PagedLayer layer{type, head_dim, block_size, length, {}, {}, {}, {}, {}};
    const int64_t blocks = (length + block_size - 1) / block_size;
    for (int64_t b = 0; b < blocks; ++b) layer.block_table.push_back(static_cast<int32_t>(b));
    std::shuffle(layer.block_table.begin(), layer.block_table.end(), rng);
    layer.keys.resize(static_cast<size_t>(blocks * layer.block_bytes()));
    layer.values.resize(layer.keys.size());
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> key(static_cast<size_t>(head_dim)), value(key.size());
    for (int64_t p = 0; p < length; ++p) {
        for (auto& x : key) x = 2.0f * normal(rng);
        for (auto& x : value) x = normal(rng);
        // The position's keys and values for both KV heads; the tests read head 1.
        std::vector<float> both_keys(2 * key.size(), -7.0f), both_values(2 * key.size(), -7.0f);
        std::copy(key.begin(), key.end(), both_keys.begin() + head_dim);
        std::copy(value.begin(), value.end(), both_values.begin() + head_dim);
        const int32_t block = layer.block_table[static_cast<size_t>(p / block_size)];
        store_kv_position(layer.shape(), KvLayerView{layer.keys.data(), layer.values.data(), layer.block_bytes()},
                          block, p % block_size, both_keys.data(), both_values.data());
        float key_scale = 1.0f, value_scale = 1.0f;  // F8_E4M3: an element is its code's value times these
        if (type == DType::F8_E4M3) {
            const int64_t scale_at = block * layer.block_bytes() + layer.shape().scale_offset(p % block_size, 1);
            std::memcpy(&key_scale, &layer.keys[static_cast<size_t>(scale_at)], sizeof key_scale);
            std::memcpy(&value_scale, &layer.values[static_cast<size_t>(scale_at)], sizeof value_scale);
        }
        for (int64_t d = 0; d < head_dim; ++d) {  // as the cache rounds them
            float rounded_key, rounded_value;
            kv_to_float(type,
                        &layer.keys[static_cast<size_t>(block * layer.block_bytes() +
                                                        layer.shape().key_offset(p % block_size, 1, d))],
                        &rounded_key, 1);
            kv_to_float(type,
                        &layer.values[static_cast<size_t>(block * layer.block_bytes() +
                                                          layer.shape().value_offset(p % block_size, 1, d))],
                        &rounded_value, 1);
            layer.stored_keys.push_back(rounded_key * key_scale);
            layer.stored_values.push_back(rounded_value * value_scale);
        }
    }
    return layer;
}

struct RunCase {
    int64_t first_position, tokens;
};

TEST(Attention, ScalarRunEqualsCausalFormulaAndEveryIsaEqualsScalar) {
    constexpr int64_t kHeads = 3, kHeadDim = 64;
    std::mt19937 rng(21);
    for (DType type : {DType::F32, DType::F16, DType::BF16, DType::F8_E4M3}) {
        for (int64_t block_size : {16, 8, 32}) {
            for (RunCase c :
                 {RunCase{0, 1}, RunCase{0, 7}, RunCase{5, 1}, RunCase{37, 32}, RunCase{16, 16}, RunCase{100, 3}}) {
                const int64_t length = c.first_position + c.tokens;
                const PagedLayer layer = make_layer(type, kHeadDim, block_size, length, rng);
                std::normal_distribution<float> normal(0.0f, 1.0f);
                const int64_t token_stride = 2 * kHeads * kHeadDim;  // queries of other heads in between
                std::vector<float> q(static_cast<size_t>(c.tokens * token_stride));
                for (auto& x : q) x = normal(rng);
                std::vector<float> scratch(static_cast<size_t>(attention_scratch_floats(kHeads, kHeadDim)));
                const float scale = 0.125f;
                std::vector<float> expected_bits(q.size(), 0.0f);
                AttentionRun run{q.data(), expected_bits.data(), token_stride, c.tokens, kHeads,
                                 kHeadDim, c.first_position};
                attend_run_with_isa(run, layer.view(), layer.block_table, scale, scratch.data(), CpuIsa::Scalar);

                for (int64_t t = 0; t < c.tokens; ++t) {
                    const int64_t visible = c.first_position + t + 1;
                    for (int64_t h = 0; h < kHeads; ++h) {
                        const float* qh = &q[static_cast<size_t>(t * token_stride + h * kHeadDim)];
                        std::vector<double> weights(static_cast<size_t>(visible));
                        double max_score = -1e300;
                        for (int64_t p = 0; p < visible; ++p) {
                            double dot = 0.0;
                            for (int64_t i = 0; i < kHeadDim; ++i)
                                dot += static_cast<double>(qh[i]) * layer.stored_keys[p * kHeadDim + i];
                            weights[p] = dot * scale;
                            max_score = std::max(max_score, weights[p]);
                        }
                        double total = 0.0;
                        for (double& w : weights) total += (w = std::exp(w - max_score));
                        for (int64_t i = 0; i < kHeadDim; ++i) {
                            double value = 0.0;
                            for (int64_t p = 0; p < visible; ++p)
                                value += weights[p] / total * layer.stored_values[p * kHeadDim + i];
                            ASSERT_NEAR(expected_bits[static_cast<size_t>(t * token_stride + h * kHeadDim + i)], value,
                                        2e-5)
                                << dtype_name(type) << " block " << block_size << " first " << c.first_position
                                << " token " << t << " head " << h << " element " << i;
                        }
                    }
                }
                for (CpuIsa isa : supported_isas()) {
                    std::vector<float> actual(q.size(), 0.0f);
                    run.out = actual.data();
                    attend_run_with_isa(run, layer.view(), layer.block_table, scale, scratch.data(), isa);
                    EXPECT_EQ(count_bit_differences(actual, expected_bits), 0)
                        << cpu_isa_name(isa) << " " << dtype_name(type) << " block " << block_size << " first "
                        << c.first_position << " tokens " << c.tokens;
                }
            }
        }
    }
}

struct WindowCase {
    int64_t first_position, tokens, window;
};

// Sliding windows: token p sees [p - W + 1, p] (llama.cpp's rule), the scalar run equals that formula
// in double and every ISA equals the scalar run bit for bit. The table entries of blocks wholly before
// the run's first window are -1, as a window layer's table holds once those blocks are freed: a kernel
// that read one would read outside the cache (AddressSanitizer's build reports it) and get other values.
TEST(Attention, WindowedRunSeesOnlyTheLastWPositions) {
    constexpr int64_t kHeads = 2, kHeadDim = 32;
    std::mt19937 rng(29);
    // Windows cutting through a block and through a chunk, runs longer than the window, a window longer
    // than the context, a window of one position, and one ending exactly on a chunk boundary.
    const WindowCase cases[] = {{100, 1, 40}, {37, 32, 20}, {5, 3, 64},   {64, 16, 16},
                                {200, 32, 1}, {130, 5, 50}, {47, 1, 512}, {90, 32, 33}};
    for (DType type : {DType::F32, DType::F16, DType::F8_E4M3}) {
        for (int64_t block_size : {16, 8, 32}) {
            for (const WindowCase& c : cases) {
                const int64_t length = c.first_position + c.tokens;
                PagedLayer layer = make_layer(type, kHeadDim, block_size, length, rng);
                const int64_t first_seen = std::max<int64_t>(0, c.first_position - c.window + 1);
                for (int64_t b = 0; b < first_seen / block_size; ++b) layer.block_table[static_cast<size_t>(b)] = -1;
                std::normal_distribution<float> normal(0.0f, 1.0f);
                const int64_t token_stride = kHeads * kHeadDim;
                std::vector<float> q(static_cast<size_t>(c.tokens * token_stride));
                for (auto& x : q) x = normal(rng);
                std::vector<float> scratch(static_cast<size_t>(attention_scratch_floats(kHeads, kHeadDim)));
                const float scale = 0.2f;
                std::vector<float> expected_bits(q.size(), 0.0f);
                AttentionRun run{q.data(), expected_bits.data(), token_stride, c.tokens, kHeads,
                                 kHeadDim, c.first_position,     c.window};
                attend_run_with_isa(run, layer.view(), layer.block_table, scale, scratch.data(), CpuIsa::Scalar);
                for (int64_t t = 0; t < c.tokens; ++t) {
                    const int64_t position = c.first_position + t;
                    const int64_t first = std::max<int64_t>(0, position - c.window + 1);
                    for (int64_t h = 0; h < kHeads; ++h) {
                        const float* qh = &q[static_cast<size_t>(t * token_stride + h * kHeadDim)];
                        std::vector<double> weights;
                        for (int64_t p = first; p <= position; ++p) {
                            double dot = 0.0;
                            for (int64_t i = 0; i < kHeadDim; ++i)
                                dot += static_cast<double>(qh[i]) * layer.stored_keys[p * kHeadDim + i];
                            weights.push_back(std::exp(dot * scale));
                        }
                        double total = 0.0;
                        for (double w : weights) total += w;
                        for (int64_t i = 0; i < kHeadDim; ++i) {
                            double value = 0.0;
                            for (int64_t p = first; p <= position; ++p)
                                value += weights[static_cast<size_t>(p - first)] / total *
                                         layer.stored_values[p * kHeadDim + i];
                            ASSERT_NEAR(expected_bits[static_cast<size_t>(t * token_stride + h * kHeadDim + i)], value,
                                        2e-5)
                                << dtype_name(type) << " block " << block_size << " first " << c.first_position
                                << " window " << c.window << " token " << t << " head " << h << " element " << i;
                        }
                    }
                }
                for (CpuIsa isa : supported_isas()) {
                    std::vector<float> actual(q.size(), 0.0f);
                    run.out = actual.data();
                    attend_run_with_isa(run, layer.view(), layer.block_table, scale, scratch.data(), isa);
                    EXPECT_EQ(count_bit_differences(actual, expected_bits), 0)
                        << cpu_isa_name(isa) << " " << dtype_name(type) << " block " << block_size << " first "
                        << c.first_position << " window " << c.window;
                }
            }
        }
    }
}

// Attention sinks (gpt-oss): head h's weights are exp(s_p) / (sum_p exp(s_p) + exp(sink_h)); the scalar run equals
// that formula in double, with sinks far below, near and far above the scores and with a window; every ISA
// equals the scalar run bit for bit; and sinks of -inf give exactly the run without sinks.
TEST(Attention, SinksJoinTheDenominatorOnly) {
    constexpr int64_t kHeads = 4, kHeadDim = 32;
    std::mt19937 rng(37);
    const WindowCase cases[] = {{0, 1, 0}, {37, 32, 0}, {100, 3, 0}, {90, 32, 33}, {130, 5, 16}};
    const float sink_sets[][kHeads] = {{0.5f, -1.0f, 2.0f, 0.0f}, {-60.0f, 60.0f, 5.0f, -5.0f}};
    for (DType type : {DType::F32, DType::F16}) {
        for (const WindowCase& c : cases) {
            const int64_t length = c.first_position + c.tokens;
            const PagedLayer layer = make_layer(type, kHeadDim, 16, length, rng);
            std::normal_distribution<float> normal(0.0f, 1.0f);
            const int64_t token_stride = kHeads * kHeadDim;
            std::vector<float> q(static_cast<size_t>(c.tokens * token_stride));
            for (auto& x : q) x = normal(rng);
            std::vector<float> scratch(static_cast<size_t>(attention_scratch_floats(kHeads, kHeadDim)));
            const float scale = 0.2f;
            for (const auto& sinks : sink_sets) {
                std::vector<float> expected_bits(q.size(), 0.0f);
                AttentionRun run{q.data(), expected_bits.data(), token_stride, c.tokens, kHeads,
                                 kHeadDim, c.first_position,     c.window,     sinks};
                attend_run_with_isa(run, layer.view(), layer.block_table, scale, scratch.data(), CpuIsa::Scalar);
                for (int64_t t = 0; t < c.tokens; ++t) {
                    const int64_t position = c.first_position + t;
                    const int64_t first = c.window > 0 ? std::max<int64_t>(0, position - c.window + 1) : 0;
                    for (int64_t h = 0; h < kHeads; ++h) {
                        const float* qh = &q[static_cast<size_t>(t * token_stride + h * kHeadDim)];
                        std::vector<double> scores;
                        double max_score = sinks[h];
                        for (int64_t p = first; p <= position; ++p) {
                            double dot = 0.0;
                            for (int64_t i = 0; i < kHeadDim; ++i)
                                dot += static_cast<double>(qh[i]) * layer.stored_keys[p * kHeadDim + i];
                            scores.push_back(dot * scale);
                            max_score = std::max(max_score, scores.back());
                        }
                        double total = std::exp(sinks[h] - max_score);
                        for (double& score : scores) total += (score = std::exp(score - max_score));
                        for (int64_t i = 0; i < kHeadDim; ++i) {
                            double value = 0.0;
                            for (int64_t p = first; p <= position; ++p)
                                value += scores[static_cast<size_t>(p - first)] / total *
                                         layer.stored_values[p * kHeadDim + i];
                            ASSERT_NEAR(expected_bits[static_cast<size_t>(t * token_stride + h * kHeadDim + i)], value,
                                        2e-5)
                                << dtype_name(type) << " first " << c.first_position << " token " << t << " head " << h
                                << " sink " << sinks[h];
                        }
                    }
                }
                for (CpuIsa isa : supported_isas()) {
                    std::vector<float> actual(q.size(), 0.0f);
                    run.out = actual.data();
                    attend_run_with_isa(run, layer.view(), layer.block_table, scale, scratch.data(), isa);
                    EXPECT_EQ(count_bit_differences(actual, expected_bits), 0)
                        << cpu_isa_name(isa) << " " << dtype_name(type) << " first " << c.first_position;
                }
            }
            const float no_sinks[kHeads] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
            std::vector<float> with_minus_infinity(q.size(), 0.0f), without(q.size(), 0.0f);
            AttentionRun run{q.data(), with_minus_infinity.data(), token_stride, c.tokens, kHeads,
                             kHeadDim, c.first_position,           c.window,     no_sinks};
            attend_run(run, layer.view(), layer.block_table, scale, scratch.data());
            run.out = without.data();
            run.sinks = nullptr;
            attend_run(run, layer.view(), layer.block_table, scale, scratch.data());
            EXPECT_EQ(count_bit_differences(with_minus_infinity, without), 0);
        }
    }
}

// A window at least as long as the context changes nothing, bit for bit.
TEST(Attention, WindowLongerThanTheContextEqualsGlobalAttention) {
    constexpr int64_t kHeads = 3, kHeadDim = 64, kTokens = 20, kFirst = 11;
    std::mt19937 rng(31);
    const PagedLayer layer = make_layer(DType::F16, kHeadDim, 16, kFirst + kTokens, rng);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const int64_t stride = kHeads * kHeadDim;
    std::vector<float> q(static_cast<size_t>(kTokens * stride));
    for (auto& x : q) x = normal(rng);
    std::vector<float> scratch(static_cast<size_t>(attention_scratch_floats(kHeads, kHeadDim)));
    std::vector<float> global(q.size()), windowed(q.size());
    attend_run(AttentionRun{q.data(), global.data(), stride, kTokens, kHeads, kHeadDim, kFirst, 0}, layer.view(),
               layer.block_table, 0.125f, scratch.data());
    attend_run(AttentionRun{q.data(), windowed.data(), stride, kTokens, kHeads, kHeadDim, kFirst, kFirst + kTokens},
               layer.view(), layer.block_table, 0.125f, scratch.data());
    EXPECT_EQ(count_bit_differences(global, windowed), 0);
}

// A token's output depends only on its own query and position, not on the run it is computed in.
void expect_token_output_independent_of_its_run(DType type) {
    constexpr int64_t kHeads = 3, kHeadDim = 64, kTokens = 20, kFirst = 11;
    std::mt19937 rng(23);
    const PagedLayer layer = make_layer(type, kHeadDim, 16, kFirst + kTokens, rng);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const int64_t stride = kHeads * kHeadDim;
    std::vector<float> q(static_cast<size_t>(kTokens * stride));
    for (auto& x : q) x = normal(rng);
    std::vector<float> scratch(static_cast<size_t>(attention_scratch_floats(kHeads, kHeadDim)));
    std::vector<float> whole(q.size()), single(q.size());
    attend_run(AttentionRun{q.data(), whole.data(), stride, kTokens, kHeads, kHeadDim, kFirst}, layer.view(),
               layer.block_table, 0.125f, scratch.data());
    for (int64_t t = 0; t < kTokens; ++t) {
        attend_run(AttentionRun{&q[static_cast<size_t>(t * stride)], &single[static_cast<size_t>(t * stride)], stride,
                                1, kHeads, kHeadDim, kFirst + t},
                   layer.view(), layer.block_table, 0.125f, scratch.data());
    }
    EXPECT_EQ(count_bit_differences(whole, single), 0);
}

TEST(Attention, TokenOutputDoesNotDependOnItsRun) { expect_token_output_independent_of_its_run(DType::F16); }

// With FP8 too: every run dequantizes the same codes and scales into the same floats.
TEST(Attention, Fp8TokenOutputDoesNotDependOnItsRun) { expect_token_output_independent_of_its_run(DType::F8_E4M3); }

// attend_heads, the plain formula, reads F8_E4M3 as attend_run does: the same dequantized floats.
TEST(Attention, AttendHeadsReadsFp8AsTheRunDoes) {
    constexpr int64_t kHeads = 2, kHeadDim = 32, kLength = 45;
    std::mt19937 rng(37);
    for (int64_t block_size : {16, 8}) {
        const PagedLayer layer = make_layer(DType::F8_E4M3, kHeadDim, block_size, kLength, rng);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::vector<float> q(static_cast<size_t>(kHeads * kHeadDim));
        for (auto& x : q) x = normal(rng);
        std::vector<float> scratch(static_cast<size_t>(attention_scratch_floats(kHeads, kHeadDim)));
        std::vector<float> run_out(q.size()), heads_out(q.size());
        attend_run(AttentionRun{q.data(), run_out.data(), kHeads * kHeadDim, 1, kHeads, kHeadDim, kLength - 1},
                   layer.view(), layer.block_table, 0.2f, scratch.data());
        std::vector<float> heads_scratch(static_cast<size_t>(kHeads * kLength + (kHeads + 1) * kHeadDim));
        attend_heads(q.data(), kHeads, kHeadDim, layer.view(), layer.block_table, kLength, 0, 0.2f,
                     heads_scratch.data(), heads_out.data());
        for (size_t i = 0; i < q.size(); ++i) EXPECT_NEAR(run_out[i], heads_out[i], 2e-5) << block_size << " " << i;
    }
}

}  // namespace attention_test
}  // namespace
}  // namespace tempered
