// Qwen3 and Llama 3, which have no real model on the registries, against llama.cpp on tiny random-weight
// GGUFs with real vocabularies (scripts/fixtures/make_tiny_models.py; CI regenerates them into
// build/tiny-models). Fixtures tests/fixtures/model/tiny_*.json hold llama.cpp's raw logits
// (scripts/fixtures/make_tiny_fixtures.py) and the sha256 of the file they were computed on; a
// regenerated file with other bytes fails rather than compare against another model's reference.
#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "../support/sha256.h"
#include "kv/kv_block_pool.h"
#include "model_run_support.h"
#include "model_test_support.h"
#include "models/model.h"
#include "sampling/sampler.h"
#include "tokenizer/tokenizer.h"

namespace tempered {
namespace {
namespace model_tiny_families_test {

// What one tiny file is held to.
struct TinyFamily {
    const char* fixture;         // tests/fixtures/model/<fixture>
    const char* architecture;    // general.architecture it must load as
    float logit_tolerance;       // largest |our logit - llama.cpp's| on the first token's top 10 and greedy steps
    float near_tie;              // a greedy divergence is allowed only where llama.cpp's top-2 margin was below this
    bool top1_always_identical;  // first-token top-1 identical on every prompt (float32 files)
    double min_identical_share;  // of the prompts whose whole greedy continuation is llama.cpp's
    // Mixtures of experts: a greedy divergence is also allowed where the forward that made the step chose an
    // expert at a near-tie of our router (selection margin below this): float32 noise of the two engines'
    // hidden states (~2e-4 of their size) moves router scores of order 3 by about 1e-3. 0: dense.
    float router_near_tie = 0.0f;
};

// Float32 weights: neither engine rounds an activation except llama.cpp's f16 rounding inside attention
// (queries and attention weights meet the f16 KV cache both engines use), so logits agree to ~1e-4 of
// their size (measured: 0.008 first token, 0.012 along greedy paths, on top logits around 30).
// F16 / BF16 weights: llama.cpp's CPU matmul rounds every activation to the weight type before multiplying
// (its vec_dot_type), we widen the weights and multiply float32 activations: f16 rounding keeps ~11
// significant bits (measured 0.027), bf16 only 8 (measured 0.15), so their tolerances are looser and a
// bf16 greedy path may leave llama.cpp's at any step whose margin is within that noise (measured: 6 of 21,
// at margins 0.012-0.091).
constexpr TinyFamily kFamilies[] = {
    {"tiny_qwen3.json", "qwen3", 0.05f, 0.05f, true, 0.9},
    // YaRN (factor 4 over 32 original positions): every greedy run goes past position 32, where the rotation
    // frequencies blend and the rotated parts carry YaRN's magnitude 1 + 0.1 ln 4.
    {"tiny_qwen3_yarn.json", "qwen3", 0.05f, 0.05f, true, 0.9},
    // Qwen3-MoE: 8 experts of which 2 per token, softmax top-2 renormalised.
    {"tiny_qwen3moe.json", "qwen3moe", 0.05f, 0.05f, true, 0.9, 0.002f},
    {"tiny_llama3.json", "llama", 0.05f, 0.05f, true, 0.9},
    {"tiny_llama3_f16.json", "llama", 0.08f, 0.1f, true, 0.9},
    {"tiny_llama3_bf16.json", "llama", 0.3f, 0.25f, false, 0.5},
};

std::filesystem::path tiny_model_dir() {
    if (const char* dir = std::getenv("TEMPERED_TINY_MODEL_DIR"); dir && *dir) return dir;
    return std::filesystem::path(TEMPERED_SOURCE_DIR) / "build" / "tiny-models";
}

class TinyFamilies : public ::testing::TestWithParam<TinyFamily> {
protected:
    void SetUp() override {
        fixture_ = nlohmann::json::parse(testing::read_text_file(testing::fixture_dir("model") / GetParam().fixture));
        const std::filesystem::path path = tiny_model_dir() / fixture_["model"].get<std::string>();
        if (!std::filesystem::exists(path)) {
            if (testing::models_required()) FAIL() << "missing " << path << " (scripts/fixtures/make_tiny_models.py)";
            GTEST_SKIP() << path << " not found: scripts/fixtures/make_tiny_models.py writes it";
        }
        ASSERT_EQ(testing::sha256_of_file(path), fixture_["sha256"].get<std::string>())
            << path << " is not the file the llama.cpp reference was computed on";
        auto loaded = testing::load_test_model(path, 256);
        ASSERT_TRUE(loaded.ok()) << loaded.error().message;
        file_ = std::move(loaded.value().file);
        pool_ = std::move(loaded.value().pool);
        model_ = std::move(loaded.value().model);
        cache_ = std::move(loaded.value().cache);
    }

    // Runs `tokens` of sequence 0 from `first_position` in one batch; logits of the last one.
    std::vector<float> run(const std::vector<int32_t>& tokens, int32_t first_position) {
        return testing::forward_tokens(*model_, *cache_, tokens, first_position);
    }

    nlohmann::json fixture_;

    // The smallest expert-selection margin of the last forward's tokens; infinity for dense models.
    float smallest_router_margin() const {
        float smallest = std::numeric_limits<float>::infinity();
        for (float margin : model_->last_router_margins()) smallest = std::min(smallest, margin);
        return smallest;
    }
    std::unique_ptr<GgufFile> file_;
    std::unique_ptr<ThreadPool> pool_;
    std::unique_ptr<Model> model_;
    std::unique_ptr<KvBlockPool> cache_;
};

TEST_P(TinyFamilies, LoadsAsItsFamily) {
    const ModelConfig& config = model_->config();
    EXPECT_EQ(config.architecture, GetParam().architecture);
    EXPECT_LT(config.kv_head_count, config.head_count);  // grouped-query attention
    if (config.architecture == "qwen3" || config.architecture == "qwen3moe") {
        EXPECT_EQ(config.rope_style, RopeStyle::Halves);
        EXPECT_EQ(config.vocab_size, 151936);
    } else {
        EXPECT_EQ(config.rope_style, RopeStyle::AdjacentPairs);
        EXPECT_FLOAT_EQ(config.rope_freq_base, 500000.0f);
        EXPECT_NE(file_->tensor("rope_freqs.weight"), nullptr);
    }
}

// Our tokenizer on the real vocabulary (Qwen2.5's plus Qwen3's added tokens; SmolLM2's for Llama 3) gives
// llama.cpp's ids for every prompt.
TEST_P(TinyFamilies, TokenizerMatchesLlamaCpp) {
    auto tokenizer = Tokenizer::from_gguf(*file_);
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.error().message;
    for (const auto& prompt : fixture_["prompts"]) {
        EXPECT_EQ(tokenizer->encode(prompt["text"].get<std::string>(), false, true),
                  prompt["tokens"].get<std::vector<int32_t>>())
            << prompt["name"];
    }
}

TEST_P(TinyFamilies, FirstTokenMatchesLlamaCpp) {
    const TinyFamily& family = GetParam();
    float worst = 0.0f, smallest_margin = 1e9f;
    size_t top1_identical = 0;
    for (const auto& prompt : fixture_["prompts"]) {
        const auto ids = prompt["first_top_ids"].get<std::vector<int32_t>>();
        const auto expected = prompt["first_top_logits"].get<std::vector<float>>();
        cache_->release(0);
        const auto ours = run(prompt["tokens"].get<std::vector<int32_t>>(), 0);
        float max_delta = 0.0f;
        for (size_t k = 0; k < ids.size(); ++k)
            max_delta = std::max(max_delta, std::fabs(ours[static_cast<size_t>(ids[k])] - expected[k]));
        worst = std::max(worst, max_delta);
        const float margin = expected[0] - expected[1];
        smallest_margin = std::min(smallest_margin, margin);
        const bool same = greedy_token(ours) == ids[0];
        top1_identical += same;
        EXPECT_LE(max_delta, family.logit_tolerance) << prompt["name"];
        if (family.top1_always_identical || margin >= family.near_tie) {
            EXPECT_TRUE(same) << prompt["name"] << ": top-1 differs (llama.cpp margin " << margin << ")";
        }
    }
    std::printf(
        "%s: max |dlogit| over the top %zu of %zu prompts %.5f; top-1 identical %zu/%zu "
        "(smallest llama.cpp top-2 margin %.4f)\n",
        family.fixture, fixture_["prompts"][0]["first_top_ids"].size(), fixture_["prompts"].size(), worst,
        top1_identical, fixture_["prompts"].size(), smallest_margin);
    EXPECT_GE(fixture_["prompts"].size(), 20u);
}

// Greedy decoding token by token from each prompt against llama.cpp's continuation; at every step the two
// agree on, the chosen token's logit too.
TEST_P(TinyFamilies, GreedyContinuationsMatchLlamaCpp) {
    const TinyFamily& family = GetParam();
    size_t identical = 0;
    float worst = 0.0f;
    for (const auto& prompt : fixture_["prompts"]) {
        const auto tokens = prompt["tokens"].get<std::vector<int32_t>>();
        const auto expected = prompt["greedy_tokens"].get<std::vector<int32_t>>();
        const auto expected_logits = prompt["greedy_logits"].get<std::vector<float>>();
        const auto margins = prompt["greedy_margins"].get<std::vector<float>>();
        cache_->release(0);
        auto ours = run(tokens, 0);
        float router_margin = smallest_router_margin();  // of the forward that made `ours`
        size_t step = 0;
        for (; step < expected.size(); ++step) {
            const int32_t next = greedy_token(ours);
            if (next != expected[step]) break;
            const float delta = std::fabs(ours[static_cast<size_t>(next)] - expected_logits[step]);
            worst = std::max(worst, delta);
            EXPECT_LE(delta, family.logit_tolerance) << prompt["name"] << " step " << step;
            ours = run({next}, static_cast<int32_t>(tokens.size() + step));
            router_margin = smallest_router_margin();
        }
        const std::string name = prompt["name"];
        if (step < expected.size()) {
            std::printf("  %-16s diverges at step %2zu: llama.cpp's top-2 margin there %.4f, our router's %.5f\n",
                        name.c_str(), step, margins[step], router_margin);
            EXPECT_TRUE(margins[step] < family.near_tie || router_margin < family.router_near_tie)
                << name << " diverges at step " << step << " without a near-tie";
        }
        identical += step == expected.size();
    }
    const size_t prompts = fixture_["prompts"].size();
    std::printf("%s: identical %zu-token greedy continuations %zu/%zu; max |dlogit| of the agreed tokens %.5f\n",
                family.fixture, fixture_["steps"].get<size_t>(), identical, prompts, worst);
    EXPECT_GE(static_cast<double>(identical), family.min_identical_share * static_cast<double>(prompts));
}

INSTANTIATE_TEST_SUITE_P(Tiny, TinyFamilies, ::testing::ValuesIn(kFamilies),
                         [](const ::testing::TestParamInfo<TinyFamily>& info) {
                             std::string name = info.param.fixture;
                             name = name.substr(0, name.find('.'));
                             std::erase(name, '_');
                             return name;
                         });

}  // namespace model_tiny_families_test
}  // namespace
}  // namespace tempered
