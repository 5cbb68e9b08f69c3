// The fast matmul kernels against their scalar twins on random weights and activations.
//
// Integer path (Q4_1, Q8_0): every ISA's kernel must equal matmul_reference_q8 bit for bit, whatever
// the batch size, tiling or thread count. matmul_reference_q8 itself must stay within the bound that
// 8-bit activations allow of the float reference matmul_reference: per block of 32, the activation
// error is at most amax / 254 per element, so |y_q8 - y| <= sum over blocks of (amax_b / 254) * sum |w|
// over that block, plus float rounding (1e-5 of sum |w * x|).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "core/half.h"
#include "core/thread_pool.h"
#include "core/whole_items_per_thread.h"
#include "kernel_test_support.h"
#include "kernels/cpu/dequantize.h"
#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/quantize_activations.h"

namespace tempered {
namespace {
namespace kernels_matmul_test {

struct Shape {
    int64_t rows, cols;
};

// SmolLM2's hidden size for the 32-element types; K-quants need whole 256-element super-blocks.
int64_t hidden_cols(DType type) { return dtype_traits(type).block_elements == 256 ? 768 : 576; }

class IntegerMatmul : public ::testing::TestWithParam<DType> {};

TEST_P(IntegerMatmul, EveryIsaEqualsScalarDefinitionBitExactly) {
    const DType type = GetParam();
    std::mt19937 rng(7);
    ThreadPool pools[] = {ThreadPool(1), ThreadPool(2), ThreadPool(3)};
    for (Shape shape : {Shape{37, hidden_cols(type)}, Shape{130, 1536}, Shape{9, 256}, Shape{1, 256}}) {
        const auto weights_data = random_weights(type, shape.rows, shape.cols, rng);
        const WeightMatrix weights{type, weights_data.data(), shape.rows, shape.cols};
        for (int64_t batch : {1, 2, 3, 5, 7, 17}) {
            const auto x = random_activations(batch, shape.cols, rng);
            std::vector<float> expected(static_cast<size_t>(batch * shape.rows));
            matmul_reference_q8(weights, x.data(), batch, expected.data());
            for (CpuIsa isa : supported_isas()) {
                for (ThreadPool& pool : pools) {
                    std::vector<float> actual(expected.size(), -1.0f);
                    matmul_with_isa(weights, x.data(), batch, actual.data(), pool, isa);
                    EXPECT_EQ(count_bit_differences(actual, expected), 0)
                        << cpu_isa_name(isa) << " rows " << shape.rows << " cols " << shape.cols << " batch " << batch
                        << " threads " << pool.size();
                }
            }
        }
    }
}

TEST_P(IntegerMatmul, SingleRowEqualsItsRowInABatchBitExactly) {
    const DType type = GetParam();
    std::mt19937 rng(11);
    ThreadPool pool(2);
    const int64_t rows = 75, cols = 1536, batch = 7;
    const auto weights_data = random_weights(type, rows, cols, rng);
    const WeightMatrix weights{type, weights_data.data(), rows, cols};
    const auto x = random_activations(batch, cols, rng);
    for (CpuIsa isa : supported_isas()) {
        std::vector<float> batched(static_cast<size_t>(batch * rows));
        matmul_with_isa(weights, x.data(), batch, batched.data(), pool, isa);
        for (int64_t b = 0; b < batch; ++b) {
            std::vector<float> single(static_cast<size_t>(rows));
            matmul_with_isa(weights, x.data() + b * cols, 1, single.data(), pool, isa);
            const std::vector<float> row(batched.begin() + b * rows, batched.begin() + (b + 1) * rows);
            EXPECT_EQ(count_bit_differences(single, row), 0) << cpu_isa_name(isa) << " batch row " << b;
        }
    }
}

TEST_P(IntegerMatmul, Avx2AndAvx512AgreeBitExactly) {
    if (!cpu_supports(CpuIsa::Avx512)) GTEST_SKIP() << "no AVX-512 VNNI here";
    const DType type = GetParam();
    std::mt19937 rng(13);
    ThreadPool pool(2);
    const int64_t rows = 1539, cols = hidden_cols(type);
    const auto weights_data = random_weights(type, rows, cols, rng);
    const WeightMatrix weights{type, weights_data.data(), rows, cols};
    for (int64_t batch : {1, 4, 9}) {
        const auto x = random_activations(batch, cols, rng);
        std::vector<float> avx2(static_cast<size_t>(batch * rows)), avx512(avx2.size());
        matmul_with_isa(weights, x.data(), batch, avx2.data(), pool, CpuIsa::Avx2);
        matmul_with_isa(weights, x.data(), batch, avx512.data(), pool, CpuIsa::Avx512);
        EXPECT_EQ(count_bit_differences(avx2, avx512), 0) << "batch " << batch;
    }
}

TEST_P(IntegerMatmul, QuantizedActivationsStayWithinTheirErrorBoundOfFloatReference) {
    const DType type = GetParam();
    std::mt19937 rng(17);
    const int64_t rows = 40, cols = 1536, batch = 3;
    const auto weights_data = random_weights(type, rows, cols, rng);
    const WeightMatrix weights{type, weights_data.data(), rows, cols};
    const auto x = random_activations(batch, cols, rng);
    std::vector<float> exact(static_cast<size_t>(batch * rows)), quantized(exact.size());
    matmul_reference(weights, x.data(), batch, exact.data());
    matmul_reference_q8(weights, x.data(), batch, quantized.data());
    std::vector<float> w(static_cast<size_t>(cols));
    const size_t row_bytes = static_cast<size_t>(*dtype_row_bytes(type, cols));
    for (int64_t r = 0; r < rows; ++r) {
        dequantize_row(type, weights_data.data() + r * row_bytes, w.data(), cols);
        for (int64_t b = 0; b < batch; ++b) {
            const float* xb = x.data() + b * cols;
            const double bound = activation_quantization_bound(w.data(), xb, cols);
            const size_t i = static_cast<size_t>(b * rows + r);
            EXPECT_LE(std::fabs(quantized[i] - exact[i]), bound) << "row " << r << " batch " << b;
        }
    }
}

// The integer definition equals, up to float rounding, the float product of the dequantized weights
// (dequantize.cpp, checked against the gguf package) with the dequantized 8-bit activations.
TEST_P(IntegerMatmul, EqualsDequantizedWeightsTimesQuantizedActivations) {
    const DType type = GetParam();
    std::mt19937 rng(29);
    const int64_t rows = 40, cols = 1536, batch = 3;
    const auto weights_data = random_weights(type, rows, cols, rng);
    const WeightMatrix weights{type, weights_data.data(), rows, cols};
    const auto x = random_activations(batch, cols, rng);
    std::vector<float> actual(static_cast<size_t>(batch * rows));
    matmul_reference_q8(weights, x.data(), batch, actual.data());
    QuantizedActivations activations;
    quantize_activations(x.data(), batch, cols, activations);
    std::vector<float> w(static_cast<size_t>(cols));
    const size_t row_bytes = static_cast<size_t>(*dtype_row_bytes(type, cols));
    for (int64_t r = 0; r < rows; ++r) {
        dequantize_row(type, weights_data.data() + r * row_bytes, w.data(), cols);
        for (int64_t b = 0; b < batch; ++b) {
            double expected = 0.0, magnitude = 0.0;
            for (int64_t i = 0; i < cols; ++i) {
                const double xi = static_cast<double>(activations.block_scale(b, i / 32)) *
                                  activations.q[static_cast<size_t>(b * cols + i)];
                expected += w[static_cast<size_t>(i)] * xi;
                magnitude += std::fabs(w[static_cast<size_t>(i)] * xi);
            }
            EXPECT_NEAR(actual[static_cast<size_t>(b * rows + r)], expected, 1e-5 * magnitude)
                << "row " << r << " batch " << b;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Types, IntegerMatmul,
                         ::testing::Values(DType::Q4_1, DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K,
                                           DType::MXFP4),
                         [](const ::testing::TestParamInfo<DType>& info) {
                             return std::string(dtype_name(info.param));
                         });

// Other types: the AVX2 float kernel equals its scalar twin bit for bit and the sequential float
// reference within float rounding (1e-5 of sum |w * x|: only the summation order differs).
TEST(FloatMatmul, Avx2EqualsScalarTwinAndIsCloseToReference) {
    std::mt19937 rng(19);
    ThreadPool pool(2);
    for (DType type : {DType::F32, DType::F16, DType::BF16, DType::Q4_0, DType::Q5_1, DType::Q3_K, DType::Q2_K}) {
        for (int64_t cols : {int64_t{512}, int64_t{1036}}) {
            if (cols % dtype_traits(type).block_elements != 0) continue;
            const int64_t rows = 7, batch = 3;
            auto weights_data = random_weights(type, rows, cols, rng);
            if (type == DType::F32 || type == DType::F16 || type == DType::BF16) {  // finite values
                std::normal_distribution<float> normal(0.0f, 0.1f);
                for (int64_t i = 0; i < rows * cols; ++i) {
                    const float v = normal(rng);
                    if (type == DType::F32) std::memcpy(&weights_data[static_cast<size_t>(i) * 4], &v, 4);
                    const uint16_t h = type == DType::F16 ? float_to_half(v) : float_to_bf16(v);
                    if (type != DType::F32) std::memcpy(&weights_data[static_cast<size_t>(i) * 2], &h, 2);
                }
            }
            const WeightMatrix weights{type, weights_data.data(), rows, cols};
            const auto x = random_activations(batch, cols, rng);
            std::vector<float> reference(static_cast<size_t>(batch * rows)), scalar(reference.size());
            matmul_reference(weights, x.data(), batch, reference.data());
            matmul_with_isa(weights, x.data(), batch, scalar.data(), pool, CpuIsa::Scalar);
            for (CpuIsa isa : supported_isas()) {
                std::vector<float> actual(reference.size());
                matmul_with_isa(weights, x.data(), batch, actual.data(), pool, isa);
                EXPECT_EQ(count_bit_differences(actual, scalar), 0) << dtype_name(type) << " " << cpu_isa_name(isa);
            }
            std::vector<float> w(static_cast<size_t>(cols));
            const size_t row_bytes = static_cast<size_t>(*dtype_row_bytes(type, cols));
            for (int64_t r = 0; r < rows; ++r) {
                dequantize_row(type, weights_data.data() + r * row_bytes, w.data(), cols);
                for (int64_t b = 0; b < batch; ++b) {
                    double magnitude = 0.0;
                    for (int64_t i = 0; i < cols; ++i)
                        magnitude += std::fabs(w[static_cast<size_t>(i)] * x[static_cast<size_t>(b * cols + i)]);
                    const size_t k = static_cast<size_t>(b * rows + r);
                    EXPECT_NEAR(scalar[k], reference[k], 1e-5 * magnitude) << dtype_name(type) << " row " << r;
                }
            }
        }
    }
}

TEST(QuantizeActivations, Avx2EqualsScalarBitExactly) {
    if (!cpu_supports(CpuIsa::Avx2)) GTEST_SKIP() << "no AVX2 here";
    std::mt19937 rng(23);
    const int64_t batch = 5, cols = 1536;
    auto x = random_activations(batch, cols, rng);
    for (int i = 64; i < 96; ++i) x[static_cast<size_t>(i)] = 0.5f * static_cast<float>(i - 80);  // ties
    QuantizedActivations scalar, avx2;
    quantize_activations(x.data(), batch, cols, scalar);
    quantize_activations_avx2(x.data(), batch, cols, avx2);
    EXPECT_EQ(scalar.q, avx2.q);
    EXPECT_EQ(scalar.scale, avx2.scale);
    EXPECT_EQ(scalar.lane_sums, avx2.lane_sums);
    EXPECT_EQ(scalar.sum, avx2.sum);
    EXPECT_EQ(scalar.scaled_sum, avx2.scaled_sum);
}

TEST(QuantizeActivations, FollowsTheDefinition) {
    std::vector<float> x(32, 0.0f);
    x[0] = -2.54f;  // amax: d = 0.02
    x[1] = 1.0f;    // 1 / 0.02 = 50
    x[2] = 0.01f;   // 0.5: rounds half to even, 0
    x[3] = 0.03f;   // 1.5: rounds to 2
    QuantizedActivations out;
    quantize_activations(x.data(), 1, 32, out);
    EXPECT_FLOAT_EQ(out.scale[0], 2.54f / 127.0f);
    EXPECT_EQ(out.q[0], -127);
    EXPECT_EQ(out.q[1], 50);
    EXPECT_EQ(out.q[2], 0);
    EXPECT_EQ(out.q[3], 2);
    EXPECT_EQ(out.lane_sums[0], -127.0f + 50.0f + 0.0f + 2.0f);
}

TEST(CpuDispatch, NamesRoundTripAndScalarIsAlwaysThere) {
    for (CpuIsa isa : {CpuIsa::Scalar, CpuIsa::Avx2, CpuIsa::Avx512}) EXPECT_EQ(parse_cpu_isa(cpu_isa_name(isa)), isa);
    EXPECT_FALSE(parse_cpu_isa("sse9").has_value());
    EXPECT_TRUE(cpu_supports(CpuIsa::Scalar));
    EXPECT_TRUE(cpu_supports(active_cpu_isa()));
}

}  // namespace kernels_matmul_test
}  // namespace
}  // namespace tempered

namespace tempered {
namespace {
namespace kernels_matmul_test {

TEST(ThreadPool, RunsEveryRangeOnceAcrossManyCalls) {
    for (int threads : {1, 2, 4}) {
        ThreadPool pool(threads);
        std::vector<int> hits(1000, 0);
        for (int call = 0; call < 2000; ++call) {
            const int64_t count = call % 7 == 0 ? 3 : 1000;
            pool.parallel_for(count, [&](int64_t begin, int64_t end) {
                for (int64_t i = begin; i < end; ++i) ++hits[static_cast<size_t>(i)];
            });
            if (call % 500 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));  // let workers sleep
        }
        int64_t total = 0;
        for (int h : hits) total += h;
        EXPECT_EQ(total, 2000 / 7 * 3 + 3 + (2000 - 2000 / 7 - 1) * 1000) << threads;
    }
}

TEST(ThreadPool, DynamicRangesCoverEveryIndexExactlyOnce) {
    for (int threads : {1, 2, 3}) {
        ThreadPool pool(threads);
        for (int64_t count : {0, 1, 5, 97, 1000}) {
            for (int64_t grain : {1, 3, 64, 5000}) {
                std::vector<std::atomic<int>> hits(static_cast<size_t>(count));
                pool.parallel_for_dynamic(count, grain, [&](int64_t begin, int64_t end) {
                    if (threads > 1) {  // one thread takes the whole range
                        EXPECT_LE(end - begin, grain);
                    }
                    for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
                });
                for (const auto& h : hits) EXPECT_EQ(h.load(), 1) << threads << " " << count << " " << grain;
            }
        }
    }
}

// Each item once, on a thread of the pool with a one-thread pool of that thread's own; the same
// runner reused across calls and pools of different sizes.
TEST(WholeItemsPerThread, RunsEachItemOnceWithItsThreadsOwnOneThreadPool) {
    WholeItemsPerThread runner;
    for (int threads : {1, 2, 3}) {
        ThreadPool pool(threads);
        for (int64_t count : {0, 1, 2, 7, 50}) {
            std::vector<std::atomic<int>> hits(static_cast<size_t>(count));
            std::vector<std::atomic<const ThreadPool*>> own_of_thread(static_cast<size_t>(threads));
            runner.run(pool, count, [&](int64_t item, int thread, ThreadPool& own) {
                EXPECT_GE(thread, 0);
                EXPECT_LT(thread, threads);
                EXPECT_EQ(own.size(), 1);
                const ThreadPool* expected = nullptr;
                auto& slot = own_of_thread[static_cast<size_t>(thread)];
                if (!slot.compare_exchange_strong(expected, &own)) {
                    EXPECT_EQ(expected, &own);
                }
                hits[static_cast<size_t>(item)].fetch_add(1);
            });
            for (const auto& h : hits) EXPECT_EQ(h.load(), 1) << threads << " " << count;
            for (int a = 0; a < threads; ++a)
                for (int b = a + 1; b < threads; ++b)
                    if (own_of_thread[a].load()) {
                        EXPECT_NE(own_of_thread[a].load(), own_of_thread[b].load());
                    }
        }
    }
}

}  // namespace kernels_matmul_test
}  // namespace
}  // namespace tempered
