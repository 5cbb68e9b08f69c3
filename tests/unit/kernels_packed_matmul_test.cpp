// The packed-weight kernels (packed_weights.h): packing keeps every weight; the AVX2 and AVX-512 kernels
// equal the scalar kernel bit for bit at any batch size and thread count; the scalar kernel follows the
// documented arithmetic; and the result stays within 8-bit activations' error bound of the float product.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/thread_pool.h"
#include "kernel_test_support.h"
#include "kernels/cpu/dequantize.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/packed_weights.h"
#include "kernels/cpu/quantize_activations.h"

namespace tempered {
namespace {
namespace kernels_packed_matmul_test {

struct PackedCase {
    std::vector<uint8_t> gguf_bytes;
    WeightMatrix gguf;
    AlignedBuffer packed_bytes;
    WeightMatrix packed;
};

PackedCase make_case(DType type, int64_t rows, int64_t cols, std::mt19937& rng) {
    PackedCase c;
    c.gguf_bytes = random_weights(type, rows, cols, rng);
    c.gguf = WeightMatrix{type, c.gguf_bytes.data(), rows, cols};
    c.packed_bytes = AlignedBuffer(static_cast<size_t>(packed_bytes(c.gguf)));
    c.packed = pack_weights(c.gguf, c.packed_bytes.data());
    return c;
}

// `cols` rounded up to whole tiles of `type` (256 columns for the K-quants, 32 for the others).
int64_t tile_cols(DType type, int64_t cols) {
    const int64_t unit = packed_tile_columns(type);
    return (cols + unit - 1) / unit * unit;
}

class PackedMatmul : public ::testing::TestWithParam<DType> {};

TEST_P(PackedMatmul, PackingSupportsOnlyWholeRowGroupsOfItsTypes) {
    const DType type = GetParam();
    const int64_t cols = tile_cols(type, 64), wide = tile_cols(type, 576);
    EXPECT_TRUE(packing_supports(WeightMatrix{type, nullptr, 16, cols}));
    EXPECT_FALSE(packing_supports(WeightMatrix{type, nullptr, 24, cols}));
    EXPECT_FALSE(packing_supports(WeightMatrix{type, nullptr, 16, cols, WeightLayout::Packed16}));
    if (packed_tile_columns(type) > 32) {
        EXPECT_FALSE(packing_supports(WeightMatrix{type, nullptr, 16, 128}));
    }
    EXPECT_FALSE(packing_supports(WeightMatrix{DType::Q5_K, nullptr, 16, 256}));
    // The file's bytes; Q4_K's decoded scales and mins take 64 more per tile (2 row groups here).
    const int64_t extra = type == DType::Q4_K ? 64 * 2 * (wide / 256) : 0;
    EXPECT_EQ(packed_bytes(WeightMatrix{type, nullptr, 32, wide}),
              static_cast<int64_t>(*dtype_row_bytes(type, static_cast<uint64_t>(wide))) * 32 + extra);
}

// Each packed weight, read back as d * q + m, equals the file's weight as the dequantizer gives it.
TEST_P(PackedMatmul, PackingKeepsEveryWeight) {
    const DType type = GetParam();
    std::mt19937 rng(3);
    const int64_t rows = 48, cols = tile_cols(type, 576);
    const PackedCase c = make_case(type, rows, cols, rng);
    EXPECT_EQ(c.packed.layout, WeightLayout::Packed16);
    std::vector<float> row(static_cast<size_t>(cols));
    const size_t row_bytes = static_cast<size_t>(*dtype_row_bytes(type, cols));
    for (int64_t r = 0; r < rows; ++r) {
        dequantize_row(type, c.gguf_bytes.data() + r * row_bytes, row.data(), cols);
        for (int64_t col = 0; col < cols; ++col) {
            const PackedWeight w = packed_weight(c.packed, r, col);
            ASSERT_EQ(w.d * static_cast<float>(w.q) + w.m, row[static_cast<size_t>(col)])
                << "row " << r << " col " << col;
        }
    }
}

TEST_P(PackedMatmul, EveryIsaEqualsScalarKernelBitExactly) {
    const DType type = GetParam();
    std::mt19937 rng(5);
    ThreadPool pools[] = {ThreadPool(1), ThreadPool(2), ThreadPool(3)};
    for (auto [rows, width] : {std::pair<int64_t, int64_t>{16, 576}, {48, 1536}, {192, 576}, {32, 32}}) {
        const int64_t cols = tile_cols(type, width);
        const PackedCase c = make_case(type, rows, cols, rng);
        for (int64_t batch : {1, 2, 3, 4, 5, 8, 9, 17, 31, 70}) {
            const auto x = random_activations(batch, cols, rng);
            std::vector<float> expected(static_cast<size_t>(batch * rows));
            matmul_with_isa(c.packed, x.data(), batch, expected.data(), pools[0], CpuIsa::Scalar);
            for (CpuIsa isa : supported_isas()) {
                for (ThreadPool& pool : pools) {
                    std::vector<float> actual(expected.size(), -1.0f);
                    matmul_with_isa(c.packed, x.data(), batch, actual.data(), pool, isa);
                    EXPECT_EQ(count_bit_differences(actual, expected), 0)
                        << cpu_isa_name(isa) << " rows " << rows << " cols " << cols << " batch " << batch
                        << " threads " << pool.size();
                }
            }
        }
    }
}

TEST_P(PackedMatmul, SingleRowEqualsItsRowInABatchBitExactly) {
    const DType type = GetParam();
    std::mt19937 rng(7);
    ThreadPool pool(2);
    const int64_t rows = 64, cols = 1536, batch = 13;
    const PackedCase c = make_case(type, rows, cols, rng);
    const auto x = random_activations(batch, cols, rng);
    for (CpuIsa isa : supported_isas()) {
        std::vector<float> batched(static_cast<size_t>(batch * rows));
        matmul_with_isa(c.packed, x.data(), batch, batched.data(), pool, isa);
        for (int64_t b = 0; b < batch; ++b) {
            std::vector<float> single(static_cast<size_t>(rows));
            matmul_with_isa(c.packed, x.data() + b * cols, 1, single.data(), pool, isa);
            const std::vector<float> row(batched.begin() + b * rows, batched.begin() + (b + 1) * rows);
            EXPECT_EQ(count_bit_differences(single, row), 0) << cpu_isa_name(isa) << " batch row " << b;
        }
    }
}

// The scalar kernel against the definition in packed_weights.h evaluated in double: they differ only
// by float rounding.
TEST_P(PackedMatmul, ScalarKernelFollowsTheDefinition) {
    const DType type = GetParam();
    std::mt19937 rng(11);
    ThreadPool pool(1);
    const int64_t rows = 32, cols = 1536, batch = 3;
    const PackedCase c = make_case(type, rows, cols, rng);
    const auto x = random_activations(batch, cols, rng);
    std::vector<float> actual(static_cast<size_t>(batch * rows));
    matmul_with_isa(c.packed, x.data(), batch, actual.data(), pool, CpuIsa::Scalar);
    QuantizedActivations q;
    quantize_activations(x.data(), batch, cols, q);
    const size_t row_bytes = static_cast<size_t>(*dtype_row_bytes(type, cols));
    std::vector<float> w(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
        dequantize_row(type, c.gguf_bytes.data() + r * row_bytes, w.data(), cols);
        for (int64_t b = 0; b < batch; ++b) {
            double expected = 0.0, magnitude = 0.0;
            for (int64_t i = 0; i < cols; ++i) {
                const double term = static_cast<double>(w[static_cast<size_t>(i)]) *
                                    q.q[static_cast<size_t>(b * cols + i)] * q.block_scale(b, i / 32);
                expected += term;
                magnitude += std::fabs(term);
            }
            EXPECT_NEAR(actual[static_cast<size_t>(b * rows + r)], expected, 1e-5 * magnitude + 1e-6)
                << "row " << r << " batch " << b;
        }
    }
}

// Against the float product of the file's weights and the unquantized activations: within the
// 8-bit activations' bound (at most amax / 254 per element of each block) plus float rounding.
TEST_P(PackedMatmul, StaysWithinActivationQuantizationBoundOfFloatReference) {
    const DType type = GetParam();
    std::mt19937 rng(13);
    ThreadPool pool(2);
    const int64_t rows = 48, cols = tile_cols(type, 576), batch = 4;
    const PackedCase c = make_case(type, rows, cols, rng);
    const auto x = random_activations(batch, cols, rng);
    std::vector<float> exact(static_cast<size_t>(batch * rows)), packed(exact.size());
    matmul_reference(c.gguf, x.data(), batch, exact.data());
    matmul(c.packed, x.data(), batch, packed.data(), pool);
    const size_t row_bytes = static_cast<size_t>(*dtype_row_bytes(type, cols));
    std::vector<float> w(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
        dequantize_row(type, c.gguf_bytes.data() + r * row_bytes, w.data(), cols);
        for (int64_t b = 0; b < batch; ++b) {
            const float* xb = x.data() + b * cols;
            const size_t i = static_cast<size_t>(b * rows + r);
            EXPECT_LE(std::fabs(packed[i] - exact[i]), activation_quantization_bound(w.data(), xb, cols))
                << "row " << r << " batch " << b;
        }
    }
}

// MXFP4's E8M0 scale bytes at the edges the kernels decode by hand: the subnormal halves (e = 0, 1), the
// smallest normal one (2) and large ones. Packing keeps every weight and every ISA equals the scalar kernel.
TEST(PackedMatmulMxfp4, ExtremeScalesEqualTheScalarKernel) {
    std::mt19937 rng(17);
    ThreadPool pool(2);
    const int64_t rows = 32, cols = 256, batch = 6;
    PackedCase c;
    c.gguf_bytes = random_weights(DType::MXFP4, rows, cols, rng);
    const uint8_t edges[] = {0, 1, 2, 3, 127, 140};
    for (size_t block = 0; block * 17 < c.gguf_bytes.size(); ++block) c.gguf_bytes[block * 17] = edges[block % 6];
    c.gguf = WeightMatrix{DType::MXFP4, c.gguf_bytes.data(), rows, cols};
    c.packed_bytes = AlignedBuffer(static_cast<size_t>(packed_bytes(c.gguf)));
    c.packed = pack_weights(c.gguf, c.packed_bytes.data());
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
        dequantize_row(DType::MXFP4, c.gguf_bytes.data() + r * 17 * (cols / 32), row.data(), cols);
        for (int64_t col = 0; col < cols; ++col) {
            const PackedWeight w = packed_weight(c.packed, r, col);
            ASSERT_EQ(w.d * static_cast<float>(w.q), row[static_cast<size_t>(col)]) << "row " << r << " col " << col;
        }
    }
    const auto x = random_activations(batch, cols, rng);
    std::vector<float> expected(static_cast<size_t>(batch * rows));
    matmul_with_isa(c.packed, x.data(), batch, expected.data(), pool, CpuIsa::Scalar);
    for (CpuIsa isa : supported_isas()) {
        for (int64_t b : {int64_t{1}, batch}) {
            std::vector<float> actual(static_cast<size_t>(b * rows), -1.0f);
            matmul_with_isa(c.packed, x.data(), b, actual.data(), pool, isa);
            const std::vector<float> want(expected.begin(), expected.begin() + b * rows);
            EXPECT_EQ(count_bit_differences(actual, want), 0) << cpu_isa_name(isa) << " batch " << b;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Types, PackedMatmul,
                         ::testing::Values(DType::Q4_1, DType::Q8_0, DType::Q5_0, DType::Q6_K, DType::Q4_K,
                                           DType::MXFP4),
                         [](const ::testing::TestParamInfo<DType>& info) {
                             return std::string(dtype_name(info.param));
                         });

}  // namespace kernels_packed_matmul_test
}  // namespace
}  // namespace tempered
