// The tiny R1-template models (scripts/fixtures/make_tiny_models.py writes them into build/tiny-models): the
// real DeepSeek-R1-Distill-Qwen vocabulary and chat template over random weights. Skips (or fails, when models
// are required) if the file is missing.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include "formats/gguf.h"
#include "model_test_support.h"
#include "tokenizer/tokenizer.h"

namespace tempered::testing {

struct TinyR1Model {
    std::unique_ptr<GgufFile> file;
    std::unique_ptr<Tokenizer> tokenizer;
    std::string chat_template;
};

// Call through ASSERT_NO_FATAL_FAILURE / check IsSkipped() after: it uses gtest's FAIL and GTEST_SKIP.
inline void load_tiny_r1_model(const std::string& name, TinyR1Model& out) {
    const auto path = std::filesystem::path(TEMPERED_SOURCE_DIR) / "build" / "tiny-models" / name;
    if (!std::filesystem::exists(path)) {
        if (models_required()) FAIL() << "missing " << path << " (scripts/fixtures/make_tiny_models.py)";
        GTEST_SKIP() << path << " not found: scripts/fixtures/make_tiny_models.py writes it";
    }
    auto file = GgufFile::open(path.string());
    ASSERT_TRUE(file.ok()) << file.error().message;
    out.file = std::make_unique<GgufFile>(std::move(file.value()));
    auto tokenizer = Tokenizer::from_gguf(*out.file);
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.error().message;
    out.tokenizer = std::make_unique<Tokenizer>(std::move(tokenizer.value()));
    out.chat_template = out.file->get_string("tokenizer.chat_template").value_or("");
}

}  // namespace tempered::testing
