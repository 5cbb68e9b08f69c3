// Hugging Face directories made from the real GGUFs (scripts/fixtures/make_hf_directories.py; scripts/test.sh
// writes SmolLM2's into build/hf-models, the others' runs are recorded) read as GGUF (hf/hf_model.h): the F32
// copy gives the GGUF's own float32 logits, the FP8 copy's weights are NumPy's dequantization bit for bit.
// TEMPERED_HF_<MODEL>_DIR points a test at another directory.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
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

// The directory of `variable`, else build/hf-models/<name>; "" when neither exists (skipped, or failed
// under TEMPERED_REQUIRE_MODELS for the ones test.sh makes).
std::string fixture_directory(const char* variable, const char* name) {
    if (const char* given = variable != nullptr ? std::getenv(variable) : nullptr) return given;
    const auto path = std::filesystem::path(TEMPERED_SOURCE_DIR) / "build" / "hf-models" / name;
    return std::filesystem::exists(path) ? path.string() : "";
}

float max_abs(const std::vector<float>& values) {
    float out = 0;
    for (float value : values) out = std::max(out, std::fabs(value));
    return out;
}

struct RealModel {
    const char* directory_variable;
    const char* fixture_name;
    const char* gguf_file;
    bool made_by_test_sh;
};

class HfModel : public ::testing::TestWithParam<RealModel> {};

TEST_P(HfModel, Float32DirectoryGivesTheGgufsFloat32Logits) {
    const std::string directory = fixture_directory(GetParam().directory_variable, GetParam().fixture_name);
    if (directory.empty()) {
        if (GetParam().made_by_test_sh && testing::models_required()) FAIL() << "no " << GetParam().fixture_name;
        GTEST_SKIP() << "no build/hf-models/" << GetParam().fixture_name
                     << " (scripts/fixtures/make_hf_directories.py)";
    }
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

// Tiny models of the families with experts and latent attention as directories (scripts/fixtures/
// make_hf_directories.py --gguf build/tiny-models/NAME.gguf: one HF tensor per routed expert, restacked at load;
// DeepSeek's kv_b joined as HF holds it) give their GGUFs' float32 logits. transformers itself agrees with these
// directories to ~5e-7 (bench/results/hf-directories-2026-12-07.md).
class HfModelTiny : public ::testing::TestWithParam<const char*> {};

TEST_P(HfModelTiny, DirectoryGivesItsGgufsLogits) {
    const std::string name = GetParam();
    const std::string directory = fixture_directory(nullptr, (name + "-hf").c_str());
    const auto gguf_path = std::filesystem::path(TEMPERED_SOURCE_DIR) / "build" / "tiny-models" / (name + ".gguf");
    if (directory.empty() || !std::filesystem::exists(gguf_path)) {
        if (testing::models_required()) FAIL() << "no build/hf-models/" << name << "-hf or its GGUF";
        GTEST_SKIP() << "no build/hf-models/" << name << "-hf (scripts/test.sh makes it)";
    }
    ThreadPool pool(2);
    auto gguf = GgufFile::open(gguf_path.string());
    ASSERT_TRUE(gguf) << gguf.error().message;
    auto reference = load_model(*gguf, pool, ModelOptions{.dequantize_weights = true});
    ASSERT_TRUE(reference) << reference.error().message;
    auto hf = open_hf_directory(directory, DType::F32);
    ASSERT_TRUE(hf) << hf.error().message;
    auto model = load_model(*hf, pool);
    ASSERT_TRUE(model) << model.error().message;
    EXPECT_EQ(static_cast<bool>((*model)->config().experts), static_cast<bool>((*reference)->config().experts));
    const std::vector<int32_t> tokens = {785, 6722, 315, 9625, 374, 1045, 2000, 30};
    auto shape = kv_cache_shape((*reference)->config(), DType::F32);
    auto cache_a = KvBlockPool::for_positions(shape, 64);
    auto cache_b = KvBlockPool::for_positions(shape, 64);
    ASSERT_TRUE(cache_a && cache_b);
    EXPECT_EQ(testing::forward_tokens(**model, **cache_b, tokens, 0, 0),
              testing::forward_tokens(**reference, **cache_a, tokens, 0, 0));
}

INSTANTIATE_TEST_SUITE_P(Families, HfModelTiny,
                         ::testing::Values("tiny-qwen3moe", "ds2-moe-f32", "ds2-moe-softmax-f32", "ds2-qlora-f32",
                                           "ds2-noqlora-f32"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                             std::string name = info.param;
                             std::erase(name, '-');
                             return name;
                         });

// The rows of Llama's Q/K as the loader stores them (llama.cpp's converter's order) taken from HF's order.
int64_t converter_row_source(int64_t row, int64_t rows, int64_t heads) {
    const int64_t head_dim = rows / heads;
    return row / head_dim * head_dim + (row % head_dim) % 2 * (head_dim / 2) + (row % head_dim) / 2;
}

// SmolLM2 with its linear layers in DeepSeek's block-scaled FP8 (scripts/fixtures/make_hf_directories.py
// --fp8): every matrix read at F32 equals, bit for bit, NumPy's dequantization the script wrote beside it.
TEST(HfFp8, DequantizedWeightsEqualNumPyBitForBit) {
    const std::string directory = fixture_directory("TEMPERED_HF_SMOLLM2_FP8_DIR", "smollm2-fp8");
    if (directory.empty()) {
        if (testing::models_required()) FAIL() << "no build/hf-models/smollm2-fp8";
        GTEST_SKIP() << "no build/hf-models/smollm2-fp8 (scripts/fixtures/make_hf_directories.py --fp8)";
    }
    const std::string reference_path = directory + "-reference.safetensors";
    auto view = open_hf_directory(directory, DType::F32);
    ASSERT_TRUE(view) << view.error().message;
    auto reference = SafetensorsFile::open(reference_path);
    ASSERT_TRUE(reference) << reference.error().message;
    ASSERT_GT(reference->tensors().size(), 200u);
    std::ifstream config_file(directory + "/config.json");
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

INSTANTIATE_TEST_SUITE_P(
    RealModels, HfModel,
    ::testing::Values(RealModel{"TEMPERED_HF_SMOLLM2_DIR", "smollm2-f32", "SmolLM2-135M-Instruct.Q4_1.gguf", true},
                      RealModel{"TEMPERED_HF_QWEN2_DIR", "qwen2-f32", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", false},
                      RealModel{"TEMPERED_HF_GEMMA3_DIR", "gemma3-f32", "gemma-3-270m-Q4_K_M.gguf", false}));

}  // namespace hf_model_test
}  // namespace
}  // namespace tempered
