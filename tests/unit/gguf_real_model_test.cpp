// The reader against an independent one: the real SmolLM2 file must read exactly as the `gguf` PyPI
// package reads it (tests/fixtures/gguf/smollm2_reference.json, from scripts/fixtures/dump_gguf_reference.py).
// Skipped when the model is absent, unless TEMPERED_REQUIRE_MODELS=1.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "formats/gguf.h"

#include "model_test_support.h"

namespace tempered {
namespace {
namespace gguf_real_model_test {

std::string model_dir() { return testing::model_dir().string(); }
using testing::models_required;

nlohmann::json load_reference() {
    std::ifstream in(std::string(TEMPERED_SOURCE_DIR) + "/tests/fixtures/gguf/smollm2_reference.json");
    return nlohmann::json::parse(in);
}

class GgufRealModel : public ::testing::Test {
protected:
    void SetUp() override {
        reference_ = load_reference();
        const std::string path = model_dir() + "/" + reference_["file"].get<std::string>();
        if (!std::filesystem::exists(path)) {
            if (models_required()) FAIL() << "model missing and TEMPERED_REQUIRE_MODELS=1: " << path;
            GTEST_SKIP() << "model not present: " << path;
        }
        auto file = GgufFile::open(path);
        ASSERT_TRUE(file.ok()) << file.error().message;
        file_.emplace(std::move(file.value()));
    }

    nlohmann::json reference_;
    std::optional<GgufFile> file_;
};

// Compares one value read by tempered with the reference's JSON value of the same GGUF type.
void expect_same_value(const GgufValue& value, const std::string& type, const nlohmann::json& expected,
                       const std::string& where) {
    SCOPED_TRACE(where);
    if (type == "string") {
        ASSERT_NE(value.as_string(), nullptr);
        EXPECT_EQ(*value.as_string(), expected.get<std::string>());
    } else if (type == "bool") {
        EXPECT_EQ(value.as_bool(), expected.get<bool>());
    } else if (type == "float32" || type == "float64") {
        EXPECT_EQ(value.as_float(), expected.get<double>());
    } else if (type == "uint64") {
        EXPECT_EQ(value.unsigned_value, expected.get<uint64_t>());
    } else {
        EXPECT_EQ(value.as_int(), expected.get<int64_t>());
    }
}

TEST_F(GgufRealModel, HeaderMatchesReference) {
    EXPECT_EQ(file_->version(), reference_["version"].get<uint32_t>());
    EXPECT_EQ(file_->alignment(), reference_["alignment"].get<uint64_t>());
    EXPECT_EQ(file_->data_offset(), reference_["data_offset"].get<uint64_t>());
}

TEST_F(GgufRealModel, MetadataMatchesReference) {
    const auto& expected = reference_["metadata"];
    ASSERT_EQ(file_->metadata().size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
        const auto& entry = expected[i];
        const auto& [key, value] = file_->metadata()[i];
        const std::string type = entry["type"];
        ASSERT_EQ(key, entry["key"].get<std::string>());
        EXPECT_EQ(gguf_value_type_name(value.type), type) << key;
        if (type != "array") {
            expect_same_value(value, type, entry["value"], key);
            continue;
        }
        const std::string element_type = entry["element_type"];
        EXPECT_EQ(gguf_value_type_name(value.element_type), element_type) << key;
        ASSERT_EQ(value.elements.size(), entry["length"].get<size_t>()) << key;
        for (size_t j = 0; j < entry["first"].size(); ++j)
            expect_same_value(value.elements[j], element_type, entry["first"][j], key + "[" + std::to_string(j) + "]");
    }
}

TEST_F(GgufRealModel, TensorTableMatchesReference) {
    const auto& expected = reference_["tensors"];
    ASSERT_EQ(file_->tensors().size(), expected.size());
    const uint8_t* base = file_->tensors().front().data - file_->tensors().front().offset - file_->data_offset();
    for (size_t i = 0; i < expected.size(); ++i) {
        const auto& entry = expected[i];
        const GgufTensorInfo& tensor = file_->tensors()[i];
        SCOPED_TRACE(tensor.name);
        EXPECT_EQ(tensor.name, entry["name"].get<std::string>());
        EXPECT_EQ(static_cast<uint32_t>(tensor.type), entry["type_id"].get<uint32_t>());
        EXPECT_EQ(tensor.dims, entry["dims"].get<std::vector<uint64_t>>());
        EXPECT_EQ(file_->data_offset() + tensor.offset, entry["data_offset"].get<uint64_t>());
        EXPECT_EQ(tensor.size_bytes, entry["n_bytes"].get<uint64_t>());
        EXPECT_EQ(tensor.data - base, entry["data_offset"].get<int64_t>());
        EXPECT_EQ(file_->tensor(tensor.name), &tensor);
    }
}

TEST_F(GgufRealModel, TypedGettersSeeTheTokenizer) {
    EXPECT_EQ(file_->get_string("general.architecture"), "llama");
    EXPECT_EQ(file_->get_int("llama.block_count"), 30);
    const auto tokens = file_->get_string_array("tokenizer.ggml.tokens");
    ASSERT_TRUE(tokens.has_value());
    EXPECT_EQ(tokens->size(), 49152u);
    EXPECT_EQ(tokens->at(1), "<|im_start|>");
    const auto token_types = file_->get_int_array("tokenizer.ggml.token_type");
    ASSERT_TRUE(token_types.has_value());
    EXPECT_EQ(token_types->size(), 49152u);
    EXPECT_EQ(file_->get_string_array("tokenizer.ggml.merges")->size(), 48900u);
}

}  // namespace gguf_real_model_test
}  // namespace
}  // namespace tempered
