// The float kernels of a transformer block against the formulas they implement, on random inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "core/half.h"
#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/elementwise_simd.h"
#include "kernels/cpu/fast_exp.h"
#include "kernels/cpu/ops.h"

namespace tempered {
namespace {
namespace ops_test {

std::vector<float> random_vector(size_t n, uint32_t seed, float scale = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, scale);
    std::vector<float> values(n);
    for (float& v : values) v = normal(rng);
    return values;
}

TEST(Ops, RmsnormMatchesFormula) {
    const auto x = random_vector(576, 1, 3.0f), weight = random_vector(576, 2);
    std::vector<float> y(576);
    rmsnorm(x.data(), weight.data(), y.data(), 576, 1e-5f);
    double mean_square = 0.0;
    for (float v : x) mean_square += static_cast<double>(v) * v / 576.0;
    for (size_t i = 0; i < x.size(); ++i) {
        const double expected = x[i] / std::sqrt(mean_square + 1e-5) * weight[i];
        EXPECT_NEAR(y[i], expected, 1e-5 * std::max(1.0, std::fabs(expected)));
    }
    rmsnorm(x.data(), weight.data(), std::vector<float>(x).data(), 576, 1e-5f);  // aliasing allowed
}

// Qwen3 / Gemma 3 query and key norms: each head normalised on its own, with the one shared weight.
TEST(Ops, RmsnormEachNormalisesEveryHeadByItsOwnRms) {
    std::vector<float> heads = {1, 2, 3, 4, /* head 1 */ 2, 2, 2, 2};
    const std::vector<float> weight = {1.0f, 0.5f, 2.0f, 1.0f};
    rmsnorm_each(heads.data(), 2, weight.data(), 4, 0.0f);
    // Head 0: mean square (1 + 4 + 9 + 16) / 4 = 7.5. Head 1: mean square 4, rms 2, so x / rms = 1.
    const float rms0 = std::sqrt(7.5f);
    const std::vector<float> expected = {1 / rms0, 2 * 0.5f / rms0, 3 * 2 / rms0, 4 / rms0, 1.0f, 0.5f, 2.0f, 1.0f};
    for (size_t i = 0; i < heads.size(); ++i) EXPECT_NEAR(heads[i], expected[i], 1e-6f) << i;
    EXPECT_NEAR(heads[2], 2.1908902f, 1e-6f);  // 6 / sqrt(7.5), by hand
}

// The rotation of pair i is multiplication of the complex number (first + i second) by e^(i angle).
void expect_rotated(const std::vector<float>& before, const std::vector<float>& after, int64_t rotary_dims,
                    float position, const std::vector<float>& inverse_frequencies, RotaryPairing pairing) {
    const int64_t pairs = rotary_dims / 2;
    for (int64_t i = 0; i < pairs; ++i) {
        const int64_t first = pairing == RotaryPairing::AdjacentElements ? 2 * i : i;
        const int64_t second = pairing == RotaryPairing::AdjacentElements ? 2 * i + 1 : i + pairs;
        const std::complex<double> z(before[first], before[second]);
        const auto rotated = z * std::polar(1.0, static_cast<double>(position) * inverse_frequencies[i]);
        EXPECT_NEAR(after[first], rotated.real(), 1e-4) << i;
        EXPECT_NEAR(after[second], rotated.imag(), 1e-4) << i;
    }
    for (size_t i = static_cast<size_t>(rotary_dims); i < before.size(); ++i) EXPECT_EQ(after[i], before[i]);
}

std::vector<float> inverse_frequencies(int64_t rotary_dims, double base) {
    std::vector<float> values;
    for (int64_t i = 0; i < rotary_dims / 2; ++i) {
        values.push_back(
            static_cast<float>(std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(rotary_dims))));
    }
    return values;
}

TEST(Ops, RopeBothStylesRotatePairsByPositionTimesFrequency) {
    for (RotaryPairing pairing : {RotaryPairing::AdjacentElements, RotaryPairing::HalvesApart}) {
        for (int64_t rotary_dims : {64, 32}) {  // 32 of 64: partial rotary embedding
            const auto frequencies = inverse_frequencies(rotary_dims, 10000.0);
            const auto x = random_vector(64, 3);
            for (float position : {0.0f, 1.0f, 17.0f, 300.0f}) {
                auto y = x;
                rope(y.data(), rotary_dims, position, frequencies.data(), pairing);
                expect_rotated(x, y, rotary_dims, position, frequencies, pairing);
            }
        }
    }
}

// The model computes each token's angles once (rope_angles) and rotates every head with them.
TEST(Ops, RopeInTwoStepsEqualsRopeBitExactly) {
    for (RotaryPairing pairing : {RotaryPairing::AdjacentElements, RotaryPairing::HalvesApart}) {
        for (int64_t rotary_dims : {64, 32}) {
            const auto frequencies = inverse_frequencies(rotary_dims, 10000.0);
            const auto x = random_vector(64, 4);
            for (float position : {0.0f, 5.0f, 1234.0f}) {
                auto one_step = x, two_steps = x;
                rope(one_step.data(), rotary_dims, position, frequencies.data(), pairing);
                std::vector<float> cos_angles(static_cast<size_t>(rotary_dims / 2)), sin_angles(cos_angles.size());
                rope_angles(position, frequencies.data(), rotary_dims / 2, cos_angles.data(), sin_angles.data());
                rope_rotate(two_steps.data(), rotary_dims, cos_angles.data(), sin_angles.data(), pairing);
                EXPECT_EQ(one_step, two_steps);
            }
        }
    }
}

// What attention relies on: q(p) · k(s) depends only on p - s.
TEST(Ops, RopeDotProductsDependOnRelativePosition) {
    const auto frequencies = inverse_frequencies(64, 100000.0);
    for (RotaryPairing pairing : {RotaryPairing::AdjacentElements, RotaryPairing::HalvesApart}) {
        const auto q = random_vector(64, 4), k = random_vector(64, 5);
        auto dot_at = [&](float p, float s) {
            auto a = q, b = k;
            rope(a.data(), 64, p, frequencies.data(), pairing);
            rope(b.data(), 64, s, frequencies.data(), pairing);
            return std::inner_product(a.begin(), a.end(), b.begin(), 0.0);
        };
        EXPECT_NEAR(dot_at(10, 3), dot_at(107, 100), 1e-3);
        EXPECT_NEAR(dot_at(5, 5), dot_at(0, 0), 1e-3);
    }
}

TEST(Ops, SoftmaxMatchesFormulaAndDoesNotOverflow) {
    auto x = random_vector(100, 6, 4.0f);
    const auto original = x;
    softmax(x.data(), 100);
    double sum = 0.0;
    for (float v : original) sum += std::exp(static_cast<double>(v));
    for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], std::exp(static_cast<double>(original[i])) / sum, 1e-6);

    std::vector<float> large = {1000.0f, 1000.0f, -1000.0f};
    softmax(large.data(), 3);
    EXPECT_FLOAT_EQ(large[0], 0.5f);
    EXPECT_FLOAT_EQ(large[1], 0.5f);
    EXPECT_EQ(large[2], 0.0f);
}

TEST(Ops, SwigluIsSiluOfGateTimesUp) {
    const auto gate = random_vector(64, 7, 3.0f), up = random_vector(64, 8);
    std::vector<float> out(64);
    swiglu(gate.data(), up.data(), out.data(), 64);
    for (size_t i = 0; i < out.size(); ++i) {
        const double g = gate[i];
        EXPECT_NEAR(out[i], g / (1.0 + std::exp(-g)) * up[i], 1e-5);
    }
}

TEST(Ops, VectorGegluTanhEqualsScalarBitExactly) {
    auto gate = random_vector(1003, 21, 4.0f);
    gate[0] = -40.0f, gate[1] = 40.0f, gate[2] = 0.0f, gate[3] = -9.5f;  // exp's clamps; zero
    const auto up = random_vector(1003, 22);
    std::vector<float> scalar(gate.size()), avx2(gate.size()), avx512(gate.size());
    geglu_tanh_scalar(gate.data(), up.data(), scalar.data(), 1003);
    if (cpu_supports(CpuIsa::Avx2)) {
        geglu_tanh_avx2(gate.data(), up.data(), avx2.data(), 1003);
        EXPECT_EQ(avx2, scalar);
    }
    if (cpu_supports(CpuIsa::Avx512)) {
        geglu_tanh_avx512(gate.data(), up.data(), avx512.data(), 1003);
        EXPECT_EQ(avx512, scalar);
    }
}

TEST(Ops, VectorClampedSwigluEqualsScalarBitExactly) {
    auto gate = random_vector(1003, 25, 12.0f), up = random_vector(1003, 26, 12.0f);
    gate[0] = -100.0f, gate[1] = 100.0f, up[2] = -100.0f, up[3] = 100.0f, gate[4] = 7.0f, up[5] = -7.0f;
    std::vector<float> scalar(gate.size()), avx2(gate.size()), avx512(gate.size());
    swiglu_clamped_scalar(gate.data(), up.data(), scalar.data(), 1003, 1.702f, 7.0f);
    const auto same_bits = [](const std::vector<float>& a, const std::vector<float>& b) {
        return std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
    };
    if (cpu_supports(CpuIsa::Avx2)) {
        swiglu_clamped_avx2(gate.data(), up.data(), avx2.data(), 1003, 1.702f, 7.0f);
        EXPECT_TRUE(same_bits(avx2, scalar));
    }
    if (cpu_supports(CpuIsa::Avx512)) {
        swiglu_clamped_avx512(gate.data(), up.data(), avx512.data(), 1003, 1.702f, 7.0f);
        EXPECT_TRUE(same_bits(avx512, scalar));
    }
}

TEST(Ops, VectorSwigluEqualsScalarBitExactly) {
    const auto gate = random_vector(1003, 17, 12.0f), up = random_vector(1003, 18);
    std::vector<float> scalar(gate.size()), avx2(gate.size()), avx512(gate.size());
    swiglu_scalar(gate.data(), up.data(), scalar.data(), 1003);
    if (cpu_supports(CpuIsa::Avx2)) {
        swiglu_avx2(gate.data(), up.data(), avx2.data(), 1003);
        EXPECT_EQ(avx2, scalar);
    }
    if (cpu_supports(CpuIsa::Avx512)) {
        swiglu_avx512(gate.data(), up.data(), avx512.data(), 1003);
        EXPECT_EQ(avx512, scalar);
    }
}

TEST(Ops, VectorExpOfScaledDifferenceEqualsScalarBitExactly) {
    auto x = random_vector(1003, 21, 40.0f);
    x[5] = -std::numeric_limits<float>::infinity();  // a banned logit: weight exactly 0
    std::vector<float> scalar(x.size());
    for (size_t i = 0; i < x.size(); ++i) scalar[i] = canonical_exp((x[i] - 3.5f) * 1.25f);
    EXPECT_EQ(scalar[5], 0.0f);
    for (CpuIsa isa : {CpuIsa::Avx2, CpuIsa::Avx512}) {
        if (!cpu_supports(isa)) continue;
        std::vector<float> fast(x.size());
        if (isa == CpuIsa::Avx2)
            exp_of_scaled_difference_avx2(x.data(), 3.5f, 1.25f, fast.data(), 1003);
        else
            exp_of_scaled_difference_avx512(x.data(), 3.5f, 1.25f, fast.data(), 1003);
        EXPECT_EQ(fast, scalar) << cpu_isa_name(isa);
    }
}

// F16C's conversion against the scalar round-to-nearest-even one, on every float class but NaN.
TEST(Ops, F16cHalfConversionEqualsScalarBitExactly) {
    if (!cpu_supports(CpuIsa::Avx2)) GTEST_SKIP() << "no AVX2";
    std::mt19937 rng(19);
    std::vector<float> values = {0.0f,
                                 -0.0f,
                                 65504.0f,
                                 65520.0f,
                                 1e10f,
                                 -1e10f,
                                 5.96e-8f,
                                 2.98e-8f,
                                 2.99e-8f,
                                 1e-9f,
                                 6.1e-5f,
                                 std::numeric_limits<float>::infinity(),
                                 -std::numeric_limits<float>::infinity()};
    std::uniform_int_distribution<uint32_t> bits;
    while (values.size() < 200000) {
        const float value = std::bit_cast<float>(bits(rng));
        if (!std::isnan(value)) values.push_back(value);
    }
    std::vector<uint16_t> fast(values.size());
    float_to_half_avx2(values.data(), fast.data(), static_cast<int64_t>(values.size()));
    for (size_t i = 0; i < values.size(); ++i) ASSERT_EQ(fast[i], float_to_half(values[i])) << values[i];
}

TEST(Ops, KvConversionsRoundTrip) {
    const auto x = random_vector(64, 9);
    std::vector<uint8_t> storage(64 * 4);
    std::vector<float> back(64);
    for (DType type : {DType::F32, DType::F16, DType::BF16}) {
        float_to_kv(type, x.data(), storage.data(), 64);
        kv_to_float(type, storage.data(), back.data(), 64);
        for (size_t i = 0; i < x.size(); ++i) {
            const float expected = type == DType::F32   ? x[i]
                                   : type == DType::F16 ? half_to_float(float_to_half(x[i]))
                                                        : bf16_to_float(float_to_bf16(x[i]));
            EXPECT_EQ(back[i], expected);
        }
    }
}

// Keys and values of `length` positions of one sequence, written to the paged layout of kv_cache.h
// (keys transposed in a block) with a shuffled block table and two KV heads per slot, as the tests of
// attend_heads read them (KV head 1), with their values as the cache rounds them.
struct PagedHead {
    static constexpr int64_t kHeadDim = 16, kKvHeads = 2, kBlockSize = 8, kBlocks = 7;
    DType type;
    int64_t element_bytes, slot_bytes, block_bytes;
    std::vector<uint8_t> keys, values;
    std::vector<int32_t> block_table = {5, 2, 6, 0, 3};
    std::vector<float> k_stored, v_stored;  // (length, head_dim)

    PagedHead(DType kv_type, int64_t length)
        : type(kv_type),
          element_bytes(kv_type == DType::F32 ? 4 : 2),
          slot_bytes(kKvHeads * kHeadDim * element_bytes),
          block_bytes(kBlockSize * slot_bytes),
          keys(static_cast<size_t>(kBlocks * block_bytes)),
          values(keys.size()) {
        const auto k = random_vector(static_cast<size_t>(length * kHeadDim), 10, 2.0f);
        const auto v = random_vector(static_cast<size_t>(length * kHeadDim), 11);
        k_stored.resize(k.size());
        v_stored.resize(v.size());
        for (int64_t p = 0; p < length; ++p) {
            const int64_t block = block_table[static_cast<size_t>(p / kBlockSize)] * block_bytes;
            const int64_t slot = p % kBlockSize;
            const int64_t value_offset = block + slot * slot_bytes + kHeadDim * element_bytes;  // KV head 1
            float_to_kv(type, &v[p * kHeadDim], &values[value_offset], kHeadDim);
            kv_to_float(type, &values[value_offset], &v_stored[p * kHeadDim], kHeadDim);
            // Element d of head 1's key: ((1 * head_dim + d) * block_size + slot).
            for (int64_t d = 0; d < kHeadDim; ++d) {
                const int64_t key_offset = block + ((kHeadDim + d) * kBlockSize + slot) * element_bytes;
                float_to_kv(type, &k[p * kHeadDim + d], &keys[key_offset], 1);
                kv_to_float(type, &keys[key_offset], &k_stored[p * kHeadDim + d], 1);
            }
        }
    }

    KvHeadView view() const {
        return KvHeadView{keys.data() + kHeadDim * kBlockSize * element_bytes,
                          values.data() + kHeadDim * element_bytes,
                          block_bytes,
                          slot_bytes,
                          kBlockSize,
                          type};
    }

    // The textbook formula in double for query q over positions [first, length).
    std::vector<double> expected(const float* q, int64_t first, int64_t length, double scale) const {
        std::vector<double> weights(static_cast<size_t>(length - first));
        for (int64_t p = first; p < length; ++p) {
            double dot = 0.0;
            for (int64_t i = 0; i < kHeadDim; ++i) dot += static_cast<double>(q[i]) * k_stored[p * kHeadDim + i];
            weights[p - first] = std::exp(dot * scale);
        }
        const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
        std::vector<double> out(kHeadDim, 0.0);
        for (int64_t i = 0; i < kHeadDim; ++i)
            for (int64_t p = first; p < length; ++p) out[i] += weights[p - first] / total * v_stored[p * kHeadDim + i];
        return out;
    }
};

// attend_heads for the three query heads sharing KV head 1 must equal the textbook formula for each of them.
TEST(Ops, AttendHeadsMatchesFormulaOverPagedBlocks) {
    constexpr int64_t kHeadDim = PagedHead::kHeadDim, kGroup = 3;
    for (DType type : {DType::F32, DType::F16, DType::BF16}) {
        for (int64_t length : {1, 8, 37}) {
            const PagedHead paged(type, length);
            const auto q = random_vector(kGroup * kHeadDim, 12, 2.0f);
            const float scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
            std::vector<float> scratch(static_cast<size_t>(kGroup * length + (kGroup + 1) * kHeadDim));
            std::vector<float> out(kGroup * kHeadDim);
            attend_heads(q.data(), kGroup, kHeadDim, paged.view(), paged.block_table, length, 0, scale, scratch.data(),
                         out.data());

            for (int64_t h = 0; h < kGroup; ++h) {
                const auto expected = paged.expected(&q[h * kHeadDim], 0, length, scale);
                for (int64_t i = 0; i < kHeadDim; ++i) {
                    EXPECT_NEAR(out[h * kHeadDim + i], expected[i], 1e-5)
                        << dtype_name(type) << " length " << length << " head " << h << " element " << i;
                }
            }
        }
    }
}

// With a window W, only the last W positions count, and the table entries of blocks wholly before
// the window are never read: they are -1 here, as a window layer's table holds once the blocks are gone.
TEST(Ops, AttendHeadsWithAWindowSeesOnlyTheLastWPositions) {
    constexpr int64_t kHeadDim = PagedHead::kHeadDim, kGroup = 3;
    struct Case {
        int64_t length, window;
    };
    // Windows cutting through a block (37 - 13 = 24 is a block start, 37 - 11 is not), one position,
    // exactly the context, and longer than it.
    for (const Case c : {Case{37, 11}, Case{37, 13}, Case{37, 1}, Case{37, 37}, Case{20, 64}, Case{1, 512}}) {
        PagedHead paged(DType::F16, c.length);
        const int64_t first = std::max<int64_t>(0, c.length - c.window);
        for (int64_t b = 0; b < first / PagedHead::kBlockSize; ++b) paged.block_table[static_cast<size_t>(b)] = -1;
        const auto q = random_vector(kGroup * kHeadDim, 13, 2.0f);
        const float scale = 0.3f;
        std::vector<float> scratch(static_cast<size_t>(kGroup * c.length + (kGroup + 1) * kHeadDim));
        std::vector<float> out(kGroup * kHeadDim);
        attend_heads(q.data(), kGroup, kHeadDim, paged.view(), paged.block_table, c.length, c.window, scale,
                     scratch.data(), out.data());
        for (int64_t h = 0; h < kGroup; ++h) {
            const auto expected = paged.expected(&q[h * kHeadDim], first, c.length, scale);
            for (int64_t i = 0; i < kHeadDim; ++i) {
                EXPECT_NEAR(out[h * kHeadDim + i], expected[i], 1e-5)
                    << "length " << c.length << " window " << c.window << " head " << h << " element " << i;
            }
        }
    }
}

// GeGLU: gelu(gate) * up with the tanh approximation llama.cpp and Gemma use, not erf's exact GELU.
// gpt-oss's clamped SwiGLU: x = min(gate, 7), y = clamp(up, -7, 7), out = x sigmoid(1.702 x) (y + 1), against the
// formula in double over values well past the clamp on both sides, and in place.
TEST(Ops, ClampedSwigluClampsGateAboveAndUpBothWays) {
    const auto gate = random_vector(257, 23, 12.0f), up = random_vector(257, 24, 12.0f);
    std::vector<float> out(gate.size());
    swiglu_clamped(gate.data(), up.data(), out.data(), static_cast<int64_t>(gate.size()), 1.702f, 7.0f);
    size_t clamped = 0;
    for (size_t i = 0; i < out.size(); ++i) {
        const double x = std::min(static_cast<double>(gate[i]), 7.0);
        const double y = std::clamp(static_cast<double>(up[i]), -7.0, 7.0);
        const double expected = x / (1.0 + std::exp(-1.702 * x)) * (y + 1.0);
        clamped += std::fabs(gate[i]) > 7.0f || std::fabs(up[i]) > 7.0f;
        EXPECT_NEAR(out[i], expected, 2e-6 * std::max(1.0, std::fabs(expected))) << gate[i] << " " << up[i];
    }
    EXPECT_GT(clamped, 50u);  // the clamp is exercised
    std::vector<float> x = {100.0f, -100.0f, 1.0f}, y = {-100.0f, 100.0f, 0.0f};
    swiglu_clamped(x.data(), y.data(), x.data(), 3, 1.702f, 7.0f);
    EXPECT_NEAR(x[0], 7.0 / (1.0 + std::exp(-1.702 * 7.0)) * -6.0, 1e-5);  // gate capped at 7, up at -7
    EXPECT_NEAR(x[1], 0.0f, 1e-30f);                                       // a very negative gate is silenced
    EXPECT_NEAR(x[2], 1.0 / (1.0 + std::exp(-1.702)), 1e-6);               // up 0 still passes the gate: y + 1
}

TEST(Ops, GegluTanhIsTanhApproximatedGeluOfGateTimesUp) {
    const auto gate = random_vector(257, 19, 3.0f), up = random_vector(257, 20);
    std::vector<float> out(gate.size());
    geglu_tanh(gate.data(), up.data(), out.data(), static_cast<int64_t>(gate.size()));
    const double sqrt_two_over_pi = std::sqrt(2.0 / std::acos(-1.0));
    for (size_t i = 0; i < out.size(); ++i) {
        const double x = gate[i];
        const double gelu = 0.5 * x * (1.0 + std::tanh(sqrt_two_over_pi * (x + 0.044715 * x * x * x)));
        EXPECT_NEAR(out[i], gelu * up[i], 2e-6 * std::max(1.0, std::fabs(gelu * up[i]))) << x;
    }
    // Known values of the approximation: gelu(1) = 0.841192, gelu(-1) = -0.158808; in place (out = gate).
    std::vector<float> x = {1.0f, -1.0f, 0.0f}, ones(3, 1.0f);
    geglu_tanh(x.data(), ones.data(), x.data(), 3);
    EXPECT_NEAR(x[0], 0.8411920f, 1e-6f);
    EXPECT_NEAR(x[1], -0.1588080f, 1e-6f);
    EXPECT_EQ(x[2], 0.0f);
}

}  // namespace ops_test
}  // namespace
}  // namespace tempered
