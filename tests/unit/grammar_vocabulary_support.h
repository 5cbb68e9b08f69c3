// Helpers for the token-mask tests: Qwen2.5's real vocabulary, the brute-force mask every faster mask
// must equal, and the schema corpus (tests/fixtures/grammar/schemas.json).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/gguf.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/token_mask.h"
#include "model_test_support.h"
#include "tokenizer/tokenizer.h"

namespace tempered::grammar::testing {

inline std::filesystem::path qwen_model() {
    return tempered::testing::model_dir() / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf";
}

// Skips (or, with TEMPERED_REQUIRE_MODELS=1, fails) the calling test when the model is absent.
#define REQUIRE_QWEN_MODEL()                                                                \
    if (!std::filesystem::exists(::tempered::grammar::testing::qwen_model())) {             \
        if (tempered::testing::models_required())                                           \
            FAIL() << "model missing: " << ::tempered::grammar::testing::qwen_model();      \
        GTEST_SKIP() << "model not pulled: " << ::tempered::grammar::testing::qwen_model(); \
    }

// Token bytes of the real vocabulary; control tokens (end of turn, tool-call tags) are left empty: the
// sampler decides about them, not the JSON grammar.
inline std::vector<std::string> qwen_vocabulary() {
    auto file = GgufFile::open(qwen_model().string());
    EXPECT_TRUE(file);
    auto tokenizer = Tokenizer::from_gguf(file.value());
    EXPECT_TRUE(tokenizer);
    std::vector<std::string> vocabulary(tokenizer->vocab_size());
    for (int32_t id = 0; id < tokenizer->vocab_size(); ++id) {
        if (!tokenizer->is_control(id)) vocabulary[id] = tokenizer->token_bytes(id);
    }
    return vocabulary;
}

inline TokenMask brute_force_mask(Matcher& matcher, const std::vector<std::string>& vocabulary) {
    TokenMask mask(vocabulary.size());
    for (uint32_t id = 0; id < vocabulary.size(); ++id) {
        if (vocabulary[id].empty()) continue;
        const Matcher::Checkpoint before = matcher.checkpoint();
        if (matcher.accept_bytes(vocabulary[id])) mask.allow(id);
        matcher.rollback(before);
    }
    return mask;
}

// (name, schema) in corpus order; schemas keep their property order.
inline std::vector<std::pair<std::string, nlohmann::ordered_json>> schema_corpus() {
    const auto text = tempered::testing::read_text_file(tempered::testing::fixture_dir("grammar") / "schemas.json");
    std::vector<std::pair<std::string, nlohmann::ordered_json>> corpus;
    for (const auto& entry : nlohmann::ordered_json::parse(text)) {
        corpus.emplace_back(entry.at("name").get<std::string>(), entry.at("schema"));
    }
    return corpus;
}

}  // namespace tempered::grammar::testing
