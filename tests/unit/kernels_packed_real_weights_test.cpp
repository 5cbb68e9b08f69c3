// The packed path on real weights: the first Q5_0, Q4_K and Q6_K matrices of Qwen2.5-Coder-0.5B (whose high
// bits and scales follow a trained distribution, not a uniform one) pack without loss and every ISA's kernel equals the
// scalar one bit for bit within the activation-quantization bound of the float product. Skipped when the
// model is absent, unless TEMPERED_REQUIRE_MODELS=1.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/thread_pool.h"
#include "formats/gguf.h"
#include "kernel_test_support.h"
#include "kernels/cpu/dequantize.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/packed_weights.h"
#include "model_test_support.h"

namespace tempered {
namespace {
namespace kernels_packed_real_weights_test {

constexpr const char* kQwenFile = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf";

// The first 2-D matrix of `type` in the Qwen file: packs losslessly, every ISA equals scalar, within
// the activation bound.
void check_first_qwen_matrix(DType type) {
    const std::filesystem::path path = testing::model_dir() / kQwenFile;
    if (!std::filesystem::exists(path)) {
        if (testing::models_required()) FAIL() << "model missing and TEMPERED_REQUIRE_MODELS=1: " << path;
        GTEST_SKIP() << "model not present: " << path;
    }
    auto file = GgufFile::open(path.string());
    ASSERT_TRUE(file.ok()) << file.error().message;
    const GgufTensorInfo* tensor = nullptr;
    for (const GgufTensorInfo& t : file.value().tensors())
        if (t.type == type && t.dims.size() == 2) {
            tensor = &t;
            break;
        }
    ASSERT_NE(tensor, nullptr) << "no " << dtype_name(type) << " matrix in " << path;
    // The first 64 rows: enough row groups for the threads, cheap for the scalar checks.
    const int64_t rows = 64, cols = static_cast<int64_t>(tensor->row_length());
    const WeightMatrix gguf{type, tensor->data, rows, cols};
    ASSERT_TRUE(packing_supports(gguf)) << tensor->name;
    AlignedBuffer storage(static_cast<size_t>(packed_bytes(gguf)));
    const WeightMatrix packed = pack_weights(gguf, storage.data());

    const size_t row_bytes = static_cast<size_t>(*dtype_row_bytes(type, static_cast<uint64_t>(cols)));
    std::vector<float> weights(static_cast<size_t>(rows * cols));
    for (int64_t r = 0; r < rows; ++r) {
        float* row = weights.data() + r * cols;
        dequantize_row(type, tensor->data + r * row_bytes, row, cols);
        for (int64_t col = 0; col < cols; ++col) {
            const PackedWeight w = packed_weight(packed, r, col);
            ASSERT_EQ(w.d * static_cast<float>(w.q) + w.m, row[col]) << tensor->name << " row " << r << " col " << col;
        }
    }

    std::mt19937 rng(17);
    ThreadPool pool(2);
    const int64_t batch = 5;
    const auto x = random_activations(batch, cols, rng);
    std::vector<float> scalar(static_cast<size_t>(batch * rows)), exact(scalar.size());
    matmul_with_isa(packed, x.data(), batch, scalar.data(), pool, CpuIsa::Scalar);
    matmul_reference(gguf, x.data(), batch, exact.data());
    for (CpuIsa isa : supported_isas()) {
        std::vector<float> actual(scalar.size(), -1.0f);
        matmul_with_isa(packed, x.data(), batch, actual.data(), pool, isa);
        EXPECT_EQ(count_bit_differences(actual, scalar), 0) << cpu_isa_name(isa) << " " << tensor->name;
    }
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t b = 0; b < batch; ++b) {
            const size_t i = static_cast<size_t>(b * rows + r);
            EXPECT_LE(std::fabs(scalar[i] - exact[i]),
                      activation_quantization_bound(weights.data() + r * cols, x.data() + b * cols, cols))
                << "row " << r << " batch " << b;
        }
}

TEST(PackedRealWeights, QwenQ5_0MatrixPacksAndMultipliesLikeTheScalarDefinition) {
    check_first_qwen_matrix(DType::Q5_0);
}

TEST(PackedRealWeights, QwenQ4_KMatrixPacksAndMultipliesLikeTheScalarDefinition) {
    check_first_qwen_matrix(DType::Q4_K);
}

TEST(PackedRealWeights, QwenQ6_KMatrixPacksAndMultipliesLikeTheScalarDefinition) {
    check_first_qwen_matrix(DType::Q6_K);
}

}  // namespace kernels_packed_real_weights_test
}  // namespace
}  // namespace tempered
