// The one decoder on the Qwen2 and Gemma 3 rows against llama.cpp on the real models: Qwen2.5-Coder-0.5B-
// Instruct (ChatML prompts, no BOS) and Gemma 3 270M (base model, plain text, BOS). Fixtures:
// tests/fixtures/model/<family>/, written by scripts/fixtures/make_model_fixtures.py --model <family> in its
// "sampled" layout (a 64th of each vocabulary plus llama.cpp's top-32 per prompt), with llama.cpp's token
// ids so that these tests do not depend on our tokenizers.
//
// Two comparisons, as for SmolLM2 (model_llama_oracle_test.cpp):
// - the float32 copy: ours with ModelOptions::dequantize_weights against llama.cpp on an ALL_F32 copy of the
//   GGUF. Neither engine quantizes activations there, so only summation order and llama.cpp's f16 rounding
//   inside attention remain: this is what shows the forward pass itself is right.
// - the quantized file as shipped, where both engines round activations to 8 bits for the quantized matmuls
//   but not identically, so a choice may flip where llama.cpp's top-2 margin is small.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <string>

#include "kv/kv_block_pool.h"
#include "model_run_support.h"
#include "model_test_support.h"
#include "models/model.h"
#include "sampling/sampler.h"

namespace tempered {
namespace {
namespace model_family_oracle_test {

// Largest |our logit - llama.cpp's| on the float32 copy (the bound). Measured over the 22 prompts:
// 0.0088 on Qwen2.5, 0.027 on Gemma 3 (whose GELU llama.cpp reads from a float16 table).
constexpr float kFloat32LogitTolerance = 0.05f;
// A greedy choice on the float32 copy may differ from llama.cpp's only where llama.cpp's top-2 margin is
// below what two logits each off by the tolerance can swap.
constexpr float kFloat32NearTieMargin = 2 * kFloat32LogitTolerance;
// At least this share of the 64-token greedy continuations on the float32 copy is identical (the issue's);
// of CI's few prompts one may part at a true tie (Gemma 3's single_word does, at a margin of 0.0001).
constexpr double kFloat32IdenticalShare = 0.9;
// The greedy tests decode the first this many prompts in CI, on the float32 copy (Qwen2.5's reads 2 GB a
// token) and on the quantized file, and follow each for its first kGreedyStepsInCi tokens (Qwen2.5's
// float32 and quantized runs took 87 s and 67 s in CI at 64). The recorded full run, every prompt for all
// 64 tokens, is TEMPERED_LONG_ORACLES=1 (or its older name TEMPERED_ORACLE_ALL_PROMPTS=1;
// bench/long_oracles.sh, bench/results/family_oracles-2026-12-01.md).
constexpr size_t kFloat32GreedyPromptsInCi = 3;
constexpr size_t kQuantizedGreedyPromptsInCi = 8;
constexpr size_t kGreedyStepsInCi = 24;
constexpr double kPerplexityRelativeTolerance = 0.01;

struct Family {
    const char* name;        // fixture directory under tests/fixtures/model/
    const char* model_file;  // in $TEMPERED_MODEL_DIR
    // Largest |our logit - llama.cpp's| on the quantized file, where the engines' 8-bit activations round
    // differently (for SmolLM2 up to 1.20 of a logit; see model_llama_oracle_test.cpp). The top-1 and
    // near-tie checks are the sharp ones; this bound catches a pass that is wrong everywhere.
    float quantized_logit_tolerance;
    // On the quantized file a top-1 or greedy choice may differ from llama.cpp's only where llama.cpp's
    // top-2 margin was below this: within what that rounding noise can swap.
    float quantized_near_tie_margin;
    // Prompts the quantized greedy test decodes in CI (all with TEMPERED_LONG_ORACLES=1).
    size_t quantized_greedy_prompts_in_ci = kQuantizedGreedyPromptsInCi;
};

// SmolLM2 (llama), the same file and bounds as model_llama_oracle_test.cpp, whose full layout runs only 8
// prompts on the float32 copy: here all 22 do.
// Its quantized greedy continuations run in CI as LlamaOracle.GreedyContinuationsDivergeOnlyAfterNearTies (all
// 22 prompts, the same bound); here only in the all-prompts run, where 6/22 are identical: the first 8 alone all
// part at near-ties (8-bit activation noise on this model), which the "at least one identical" check refuses.
constexpr Family kSmollm2{"smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", 2.0f, 0.75f, 0};
// Qwen2.5: logits measured 0.37 over the 22 prompts (our Q5_0 matrices multiplied as float32 at the time);
// the SmolLM2 bound of 2.0 leaves room for 8-bit activation kernels on those matrices. Near-ties: the
// SmolLM2 and first Qwen2 oracles' 0.75 (largest divergence margin measured: 0.15).
constexpr Family kQwen2{"qwen2", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", 2.0f, 0.75f};
// Gemma 3: logits measured 1.88 (python_code; 0.54-1.34 on the others). Its logits span tens, its residual
// stream is large (embeddings times sqrt(640)), and llama.cpp's GELU reads a float16 table. Near-ties:
// one log-probability moves by up to 0.54 (Gemma3Oracle's measurement), so two can swap at a margin up to
// 1.08. Measured: html diverges at a margin of 0.79 on the quantized file, while its 64 steps on the
// float32 copy are identical to llama.cpp's, so that divergence is rounding noise, not the forward pass.
constexpr Family kGemma3{"gemma3", "gemma-3-270m-Q4_K_M.gguf", 3.0f, 1.1f};

struct LoadedModels {
    std::string family;
    GgufFile file;
    std::unique_ptr<ThreadPool> pool;
    std::unique_ptr<Model> quantized;
    std::unique_ptr<Model> dequantized;  // loaded on first use
};

bool long_oracles() {
    for (const char* knob : {"TEMPERED_LONG_ORACLES", "TEMPERED_ORACLE_ALL_PROMPTS"}) {
        const char* value = std::getenv(knob);
        if (value && std::string(value) == "1") return true;
    }
    return false;
}

// How many of `available` prompts, or of a continuation's tokens, a greedy test follows: `in_ci`, or all
// in the long run.
size_t greedy_length(size_t available, size_t in_ci) { return long_oracles() ? available : std::min(available, in_ci); }

// llama.cpp's last-position logits that a fixture keeps for one prompt on one model: every
// `stride`-th token id, and its top ids with their logits.
struct ReferenceLogits {
    const float* sampled;  // logits of ids 0, stride, 2 * stride, ...
    int64_t stride;
    std::vector<int32_t> top_ids;
    std::vector<float> top_logits;

    // Largest |ours - theirs| over every logit the fixture has.
    float max_delta(const std::vector<float>& ours) const {
        float worst = 0.0f;
        for (int64_t id = 0, row = 0; id < static_cast<int64_t>(ours.size()); id += stride, ++row)
            worst = std::max(worst, std::fabs(ours[static_cast<size_t>(id)] - sampled[row]));
        for (size_t i = 0; i < top_ids.size(); ++i)
            worst = std::max(worst, std::fabs(ours[static_cast<size_t>(top_ids[i])] - top_logits[i]));
        return worst;
    }

    // llama.cpp's top-1 logit minus its logit for `token`; infinite when `token` is not in its top ids.
    float margin_to(int32_t token) const {
        const auto it = std::find(top_ids.begin(), top_ids.end(), token);
        if (it == top_ids.end()) return INFINITY;
        return top_logits[0] - top_logits[static_cast<size_t>(it - top_ids.begin())];
    }
};

class FamilyOracle : public ::testing::TestWithParam<Family> {
protected:
    void SetUp() override {
        TEMPERED_MODEL_OR_SKIP(path, GetParam().model_file);
        if (!loaded_ || loaded_->family != GetParam().name) {
            loaded_.reset();  // one family's models in memory at a time
            auto file = GgufFile::open(path.string());
            ASSERT_TRUE(file.ok()) << file.error().message;
            loaded_ = std::make_unique<LoadedModels>(LoadedModels{GetParam().name, std::move(file.value()),
                                                                  std::make_unique<ThreadPool>(2), nullptr, nullptr});
            auto model = load_model(loaded_->file, *loaded_->pool);
            ASSERT_TRUE(model.ok()) << model.error().message;
            loaded_->quantized = std::move(model.value());
        }
        vocab_ = loaded_->quantized->config().vocab_size;
        auto cache = KvBlockPool::for_positions(kv_cache_shape(loaded_->quantized->config(), DType::F16), 1024);
        ASSERT_TRUE(cache.ok()) << cache.error().message;
        cache_ = std::move(cache.value());
        fixture_ = nlohmann::json::parse(testing::read_text_file(fixture_dir() / "prompts.json"));
        ASSERT_EQ(fixture_["meta"]["vocab_size"].get<int64_t>(), vocab_);
    }

    std::filesystem::path fixture_dir() const { return testing::fixture_dir("model") / GetParam().name; }
    Model& quantized() { return *loaded_->quantized; }
    Model& dequantized() {
        if (!loaded_->dequantized) {
            auto model = load_model(loaded_->file, *loaded_->pool, ModelOptions{.dequantize_weights = true});
            EXPECT_TRUE(model.ok()) << model.error().message;
            loaded_->dequantized = std::move(model.value());
        }
        return *loaded_->dequantized;
    }
    const nlohmann::json& prompts() const { return fixture_["prompts"]; }

    // The fixture's reference for prompt `p`; `part` is "quantized" or "dequantized".
    ReferenceLogits reference(const std::vector<float>& sampled, size_t p, const char* part) const {
        const int64_t stride = fixture_["meta"]["sample_stride"];
        const size_t row = static_cast<size_t>((vocab_ + stride - 1) / stride);
        EXPECT_EQ(sampled.size(), prompts().size() * row);
        const auto& top = prompts()[p][part];
        return {&sampled[p * row], stride, top["top_ids"].get<std::vector<int32_t>>(),
                top["top_logits"].get<std::vector<float>>()};
    }

    // Runs `tokens` of sequence 0 from `first_position` in one batch on `model`; logits of the last one.
    std::vector<float> run(Model& model, const std::vector<int32_t>& tokens, int32_t first_position) {
        return testing::forward_tokens(model, *cache_, tokens, first_position);
    }

    std::vector<float> prefill(Model& model, const nlohmann::json& prompt) {
        cache_->release(0);
        return run(model, prompt["tokens"].get<std::vector<int32_t>>(), 0);
    }

    // Greedy decoding from `prompt` on `model` against llama.cpp's continuation in prompt[part] (its first
    // greedy_length tokens). Returns the step of the first divergence (the length followed if none) after
    // checking that llama.cpp's top-2 margin there was below `near_tie`.
    size_t follow_greedy(Model& model, const nlohmann::json& prompt, const char* part, float near_tie) {
        auto expected = prompt[part]["greedy_tokens"].get<std::vector<int32_t>>();
        expected.resize(greedy_length(expected.size(), kGreedyStepsInCi));
        const auto margins = prompt[part]["greedy_margins"].get<std::vector<float>>();
        const int32_t prompt_length = static_cast<int32_t>(prompt["tokens"].size());
        auto logits = prefill(model, prompt);
        size_t step = 0;
        for (; step < expected.size(); ++step) {
            const int32_t next = greedy_token(logits);
            if (next != expected[step]) break;
            logits = run(model, {next}, prompt_length + static_cast<int32_t>(step));
        }
        const std::string name = prompt["name"];
        if (step < expected.size()) {
            std::printf("  %-20s diverges at step %2zu: llama.cpp's top-2 margin there %.4f\n", name.c_str(), step,
                        margins[step]);
            EXPECT_LT(margins[step], near_tie) << name << " diverges at step " << step << " without a near-tie";
        }
        return step;
    }

    static inline std::unique_ptr<LoadedModels> loaded_;
    int64_t vocab_ = 0;
    std::unique_ptr<KvBlockPool> cache_;
    nlohmann::json fixture_;
};

TEST_P(FamilyOracle, Float32CopyLastLogitsMatchLlamaCpp) {
    const auto sampled = testing::read_f32_file(fixture_dir() / "last_logits_dequantized_sampled.f32");
    ASSERT_GE(prompts().size(), 20u);
    float worst = 0.0f;
    for (size_t p = 0; p < prompts().size(); ++p) {
        const ReferenceLogits theirs = reference(sampled, p, "dequantized");
        const auto ours = prefill(dequantized(), prompts()[p]);
        const float delta = theirs.max_delta(ours);
        worst = std::max(worst, delta);
        const int32_t top1 = greedy_token(ours);
        EXPECT_LE(delta, kFloat32LogitTolerance) << prompts()[p]["name"];
        EXPECT_EQ(top1, theirs.top_ids[0]) << prompts()[p]["name"] << ": first-token top-1 differs";
        std::printf("  %-20s %3zu tokens  max|dlogit| %.4f  top-1 %s\n",
                    prompts()[p]["name"].get<std::string>().c_str(), prompts()[p]["tokens"].size(), delta,
                    top1 == theirs.top_ids[0] ? "same" : "differs");
    }
    std::printf("%s float32 copy: max |dlogit| over %zu prompts: %.4f\n", GetParam().name, prompts().size(), worst);
}

TEST_P(FamilyOracle, Float32CopyGreedyContinuationsMatchLlamaCpp) {
    const size_t count = greedy_length(prompts().size(), kFloat32GreedyPromptsInCi);
    int identical = 0;
    for (size_t p = 0; p < count; ++p) {
        const auto& prompt = prompts()[p];
        identical += follow_greedy(dequantized(), prompt, "dequantized", kFloat32NearTieMargin) ==
                     greedy_length(prompt["dequantized"]["greedy_tokens"].size(), kGreedyStepsInCi);
    }
    std::printf("%s float32 copy: identical greedy continuations (%zu tokens): %d/%zu\n", GetParam().name,
                greedy_length(64, kGreedyStepsInCi), identical, count);
    const double allowed_to_diverge =
        std::max(1.0, std::floor((1.0 - kFloat32IdenticalShare) * static_cast<double>(count)));
    EXPECT_GE(identical, static_cast<double>(count) - allowed_to_diverge);
}

// The quantized file: every logit the fixture has within the family's tolerance, and our top-1 llama.cpp's
// except where llama.cpp's margin between the two is a near-tie.
TEST_P(FamilyOracle, QuantizedTop1MatchesLlamaCppExceptAtNearTies) {
    const auto sampled = testing::read_f16_file(fixture_dir() / "last_logits_sampled.f16");
    float worst = 0.0f;
    int agree = 0;
    for (size_t p = 0; p < prompts().size(); ++p) {
        const ReferenceLogits theirs = reference(sampled, p, "quantized");
        const auto ours = prefill(quantized(), prompts()[p]);
        const float delta = theirs.max_delta(ours);
        worst = std::max(worst, delta);
        const int32_t top1 = greedy_token(ours);
        agree += top1 == theirs.top_ids[0];
        const float margin = theirs.margin_to(top1);
        EXPECT_LE(delta, GetParam().quantized_logit_tolerance) << prompts()[p]["name"];
        EXPECT_LT(margin, GetParam().quantized_near_tie_margin) << prompts()[p]["name"] << ": top-1 differs";
        if (top1 == theirs.top_ids[0]) {
            std::printf("  %-20s max|dlogit| %.4f  top-1 same (llama.cpp's top-2 margin %.4f)\n",
                        prompts()[p]["name"].get<std::string>().c_str(), delta, theirs.margin_to(theirs.top_ids[1]));
        } else {
            std::printf("  %-20s max|dlogit| %.4f  top-1 differs (llama.cpp's margin to ours %.4f)\n",
                        prompts()[p]["name"].get<std::string>().c_str(), delta, margin);
        }
    }
    std::printf("%s quantized: max |dlogit| over %zu prompts: %.4f; top-1 agreement %d/%zu\n", GetParam().name,
                prompts().size(), worst, agree, prompts().size());
}

TEST_P(FamilyOracle, QuantizedGreedyContinuationsDivergeOnlyAfterNearTies) {
    const size_t count = greedy_length(prompts().size(), GetParam().quantized_greedy_prompts_in_ci);
    if (count == 0) GTEST_SKIP() << GetParam().name << ": runs with TEMPERED_LONG_ORACLES=1";
    int identical = 0;
    for (size_t p = 0; p < count; ++p) {
        const auto& prompt = prompts()[p];
        identical += follow_greedy(quantized(), prompt, "quantized", GetParam().quantized_near_tie_margin) ==
                     greedy_length(prompt["quantized"]["greedy_tokens"].size(), kGreedyStepsInCi);
    }
    std::printf("%s quantized: identical greedy continuations (%zu tokens): %d/%zu\n", GetParam().name,
                greedy_length(64, kGreedyStepsInCi), identical, count);
    EXPECT_GE(identical, 1);  // a forward pass that is wrong everywhere cannot hide behind near-ties alone
}

// The fixture's protocol (make_model_fixtures.py): non-overlapping windows from position 0, each as the
// fixture lists it (BOS first where llama.cpp adds BOS), every token after the first of a window scored.
// Each window is prefilled in chunks (a whole window's logits would be 512 MB for Gemma's vocabulary).
TEST_P(FamilyOracle, PerplexityWithinOnePercentOfLlamaCpp) {
    const auto fixture = nlohmann::json::parse(testing::read_text_file(fixture_dir() / "perplexity.json"));
    const auto tokens = fixture["tokens"].get<std::vector<int32_t>>();
    const int64_t window = fixture["window"], windows = fixture["windows"];
    ASSERT_EQ(static_cast<int64_t>(tokens.size()), window * windows);
    constexpr int64_t kChunk = 128;
    std::vector<float> logits(static_cast<size_t>(kChunk * vocab_));
    double total_nll = 0.0;
    int64_t scored = 0;
    for (int64_t w = 0; w < windows; ++w) {
        const int32_t* window_tokens = &tokens[static_cast<size_t>(w * window)];
        cache_->release(0);
        ASSERT_TRUE(cache_->ensure_capacity(0, window));
        for (int64_t begin = 0; begin < window; begin += kChunk) {
            Batch batch;
            for (int64_t i = begin; i < std::min(window, begin + kChunk); ++i)
                batch.add(window_tokens[i], static_cast<int32_t>(i), 0, true);
            ASSERT_TRUE(quantized().forward(batch, *cache_, logits.data()).ok());
            for (int64_t i = 0; i < batch.size() && begin + i + 1 < window; ++i) {
                const float* row = &logits[static_cast<size_t>(i * vocab_)];
                const float max_logit = *std::max_element(row, row + vocab_);
                double sum = 0.0;
                for (int64_t v = 0; v < vocab_; ++v) sum += std::exp(static_cast<double>(row[v] - max_logit));
                total_nll += std::log(sum) - static_cast<double>(row[window_tokens[begin + i + 1]] - max_logit);
                ++scored;
            }
        }
    }
    const double ours = std::exp(total_nll / static_cast<double>(scored));
    const double theirs = fixture["perplexity"];
    std::printf("%s perplexity over %lld tokens: ours %.4f, llama.cpp %.4f (%+.3f%%)\n", GetParam().name,
                static_cast<long long>(scored), ours, theirs, 100.0 * (ours - theirs) / theirs);
    EXPECT_EQ(scored, windows * (window - 1));
    EXPECT_NEAR(ours, theirs, kPerplexityRelativeTolerance * theirs);
}

// Separate suites per family so that each family's tests run together and its models load once.
INSTANTIATE_TEST_SUITE_P(Smollm2, FamilyOracle, ::testing::Values(kSmollm2),
                         [](const auto& info) { return std::string(info.param.name); });
INSTANTIATE_TEST_SUITE_P(Qwen2, FamilyOracle, ::testing::Values(kQwen2),
                         [](const auto& info) { return std::string(info.param.name); });
INSTANTIATE_TEST_SUITE_P(Gemma3, FamilyOracle, ::testing::Values(kGemma3),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace model_family_oracle_test
}  // namespace
}  // namespace tempered
