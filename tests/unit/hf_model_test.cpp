// A Hugging Face directory of SmolLM2 (its GGUF's weights dequantized to F32 and written by transformers)
// read as GGUF (hf/hf_model.h) gives the logits of the GGUF itself on its float32 path.
// TEMPERED_HF_SMOLLM2_DIR names the directory; the test is skipped without it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

#include "formats/safetensors.h"
#include "hf/hf_config.h"
#include "hf/hf_model.h"
#include "hf/hf_tensors.h"
#include "kv/kv_block_pool.h"
#include "model_run_support.h"
#include "model_test_support.h"
#include "models/model.h"

namespace tempered {
namespace {
namespace hf_model_test {

float max_abs(const std::vector<float>& values) {
    float out = 0;
    for (float value : values) out = std::max(out, std::fabs(value));
    return out;
}

struct RealModel {
    const char* directory_variable;
    const char* gguf_file;
};

class HfModel : public ::testing::TestWithParam<RealModel> {};

TEST_P(HfModel, Float32DirectoryGivesTheGgufsFloat32Logits) {
    const char* directory = std::getenv(GetParam().directory_variable);
    if (directory == nullptr) GTEST_SKIP() << GetParam().directory_variable << " not set";
    TEMPERED_MODEL_OR_SKIP(gguf_path, GetParam().gguf_file);
    ThreadPool pool(2);
    auto gguf = GgufFile::open(gguf_path.string());
    ASSERT_TRUE(gguf) << gguf.error().message;
    auto reference = load_model(*gguf, pool, ModelOptions{.dequantize_weights = true});
    ASSERT_TRUE(reference) << reference.error().message;
    auto hf = open_hf_directory(directory, DType::F32);
    ASSERT_TRUE(hf) << hf.error().message;
    auto model = load_model(*hf, pool);
    ASSERT_TRUE(model) << model.error().message;
    EXPECT_EQ((*model)->config().layer_count, (*reference)->config().layer_count);

    const std::vector<int32_t> tokens = {2,   504,  3458, 282, 4649, 314,
                                         253, 1345, 30,   378, 1520, 314};  // ids valid in all three
    auto shape = kv_cache_shape((*reference)->config(), DType::F32);
    auto cache_a = KvBlockPool::for_positions(shape, 256);
    auto cache_b = KvBlockPool::for_positions(shape, 256);
    ASSERT_TRUE(cache_a && cache_b);
    const auto expected = testing::forward_tokens(**reference, **cache_a, tokens, 0, 0);
    const auto actual = testing::forward_tokens(**model, **cache_b, tokens, 0, 0);
    ASSERT_EQ(actual.size(), expected.size());
    const float scale = max_abs(expected);
    float worst = 0;
    for (size_t i = 0; i < expected.size(); ++i) worst = std::max(worst, std::fabs(actual[i] - expected[i]));
    EXPECT_LE(worst, 1e-4f * scale) << "max |logit| " << scale;
    std::printf("worst |difference| %g of max |logit| %g\n", static_cast<double>(worst), static_cast<double>(scale));
}

// The rows of Llama's Q/K as the loader stores them (llama.cpp's converter's order) taken from HF's order.
int64_t converter_row_source(int64_t row, int64_t rows, int64_t heads) {
    const int64_t head_dim = rows / heads;
    return row / head_dim * head_dim + (row % head_dim) % 2 * (head_dim / 2) + (row % head_dim) / 2;
}

// SmolLM2 with its linear layers in DeepSeek's block-scaled FP8 (scripts/fixtures/make_hf_directories.py
// --fp8): every matrix read at F32 equals, bit for bit, NumPy's dequantization the script wrote beside it.
TEST(HfFp8, DequantizedWeightsEqualNumPyBitForBit) {
    const char* directory = std::getenv("TEMPERED_HF_SMOLLM2_FP8_DIR");
    const char* reference_path = std::getenv("TEMPERED_HF_SMOLLM2_FP8_REFERENCE");
    if (directory == nullptr || reference_path == nullptr)
        GTEST_SKIP() << "TEMPERED_HF_SMOLLM2_FP8_DIR/_REFERENCE not set";
    auto view = open_hf_directory(directory, DType::F32);
    ASSERT_TRUE(view) << view.error().message;
    auto reference = SafetensorsFile::open(reference_path);
    ASSERT_TRUE(reference) << reference.error().message;
    ASSERT_GT(reference->tensors().size(), 200u);
    std::ifstream config_file(std::string(directory) + "/config.json");
    auto model = describe_hf_model(nlohmann::json::parse(config_file));
    ASSERT_TRUE(model) << model.error().message;
    EXPECT_EQ(model->fp8_block_rows, 128);
    int64_t compared = 0;
    for (const SafetensorsTensor& expected : reference->tensors()) {
        auto name = gguf_tensor_name(*model, expected.name);
        ASSERT_TRUE(name && !name->empty()) << expected.name;
        const GgufTensorInfo* actual = view->tensor(*name);
        ASSERT_NE(actual, nullptr) << *name;
        ASSERT_EQ(actual->type, DType::F32);
        ASSERT_EQ(actual->size_bytes, expected.data.size());
        const int64_t rows = static_cast<int64_t>(expected.shape[0]);
        const size_t row_bytes = expected.data.size() / static_cast<size_t>(rows);
        const bool query = name->find("attn_q.") != std::string::npos;
        const bool key = name->find("attn_k.") != std::string::npos;
        for (int64_t r = 0; r < rows; ++r) {
            const int64_t source = query ? converter_row_source(r, rows, model->head_count)
                                   : key ? converter_row_source(r, rows, model->kv_head_count)
                                         : r;
            ASSERT_EQ(std::memcmp(actual->data + static_cast<size_t>(r) * row_bytes,
                                  expected.data.data() + static_cast<size_t>(source) * row_bytes, row_bytes),
                      0)
                << *name << " row " << r;
        }
        ++compared;
    }
    std::printf("%lld FP8 matrices equal NumPy's dequantization\n", static_cast<long long>(compared));
}

INSTANTIATE_TEST_SUITE_P(RealModels, HfModel,
                         ::testing::Values(RealModel{"TEMPERED_HF_SMOLLM2_DIR", "SmolLM2-135M-Instruct.Q4_1.gguf"},
                                           RealModel{"TEMPERED_HF_QWEN2_DIR",
                                                     "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"},
                                           RealModel{"TEMPERED_HF_GEMMA3_DIR", "gemma-3-270m-Q4_K_M.gguf"}));

}  // namespace hf_model_test
}  // namespace
}  // namespace tempered
