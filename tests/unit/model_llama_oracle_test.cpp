// The Llama forward pass against llama.cpp on the real SmolLM2-135M-Instruct (Q4_1 weights, Q8_0
// embeddings). Fixtures: tests/fixtures/model/, written by scripts/fixtures/make_model_fixtures.py, with
// token ids from llama.cpp's tokenizer so that these tests do not depend on ours.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "kv/kv_block_pool.h"
#include "model_run_support.h"
#include "model_test_support.h"
#include "models/model.h"
#include "sampling/sampler.h"

namespace tempered {
namespace {
namespace model_llama_oracle_test {

constexpr const char* kModelFile = "SmolLM2-135M-Instruct.Q4_1.gguf";
// Largest |our logit - llama.cpp's logit| allowed at the last prompt position. Both engines quantize
// activations to 8 bits (blocks of 32, scale max|x|/127) for the quantized matmuls. This model's
// residual stream has outlier dimensions, so a block holding one is quantized coarsely and its rounding
// decisions flip with any last-bit difference upstream (summation order, llama.cpp's f16 scales and
// its f16 rounding of queries and attention weights): the two engines then differ by tenths of a logit,
// as either differs from float activations. On float activations they agree to ~0.01 (see
// DequantizedModelMatchesLlamaCppOnFloat32Copy), which is what shows the forward pass itself is right.
// Measured: 1.20 over the 22 prompts; llama.cpp's own 8-bit result is 0.5-0.6 from its float32 one, and
// reordering one sum inside our attention moves our logits by up to 0.2.
constexpr float kLogitTolerance = 2.0f;
// A top-1 or greedy choice may differ from llama.cpp's only where llama.cpp's margin between the two
// tokens was below this: within the noise of 8-bit activations (measured: largest such margin 0.40).
constexpr float kNearTieMargin = 0.75f;
// With dequantized weights no activation is quantized in either engine (measured 0.010 over 8 prompts).
constexpr float kDequantizedLogitTolerance = 0.03f;
constexpr double kPerplexityRelativeTolerance = 0.01;
// The greedy test follows each of the 22 continuations for its first this many tokens in CI (26 s there at
// 64); TEMPERED_LONG_ORACLES=1 follows all 64 (bench/long_oracles.sh).
constexpr size_t kGreedyStepsInCi = 24;
// Continuations followed to the end without a divergence, at least: measured 6 of the 22 over all 64 tokens
// (11 over CI's 24; fixtures/model's README); a shorter run can only keep more. Near-ties explain every
// divergence, but a forward pass that is wrong everywhere must not hide behind them.
constexpr int kIdenticalGreedyContinuations = 6;

size_t greedy_steps(size_t available) {
    const char* long_run = std::getenv("TEMPERED_LONG_ORACLES");
    return long_run && std::string(long_run) == "1" ? available : std::min(available, kGreedyStepsInCi);
}

struct LoadedModel {
    GgufFile file;
    std::unique_ptr<ThreadPool> pool;
    std::unique_ptr<Model> model;
};

class LlamaOracle : public ::testing::Test {
protected:
    void SetUp() override {
        TEMPERED_MODEL_OR_SKIP(path, kModelFile);
        if (!loaded_) {
            auto file = GgufFile::open(path.string());
            ASSERT_TRUE(file.ok()) << file.error().message;
            loaded_ = std::make_unique<LoadedModel>(
                LoadedModel{std::move(file.value()), std::make_unique<ThreadPool>(2), nullptr});
            auto model = load_model(loaded_->file, *loaded_->pool);
            ASSERT_TRUE(model.ok()) << model.error().message;
            loaded_->model = std::move(model.value());
        }
        model_ = loaded_->model.get();
        vocab_ = model_->config().vocab_size;
        auto cache = KvBlockPool::for_positions(kv_cache_shape(model_->config(), DType::F16), 1024);
        ASSERT_TRUE(cache.ok()) << cache.error().message;
        cache_ = std::move(cache.value());
    }

    // The same weights as float32 (ModelOptions::dequantize_weights), loaded on first use.
    Model& dequantized_model() {
        if (!dequantized_) {
            auto model = load_model(loaded_->file, *loaded_->pool, ModelOptions{.dequantize_weights = true});
            EXPECT_TRUE(model.ok()) << model.error().message;
            dequantized_ = std::move(model.value());
        }
        return *dequantized_;
    }

    static nlohmann::json load_json(const char* name) {
        return nlohmann::json::parse(testing::read_text_file(testing::fixture_dir("model") / name));
    }

    // Runs `tokens` of `sequence` from `first_position` in one batch; logits of the last one.
    std::vector<float> run(const std::vector<int32_t>& tokens, int32_t first_position, int32_t sequence = 0) {
        return run_on(*model_, tokens, first_position, sequence);
    }
    std::vector<float> run_on(Model& model, const std::vector<int32_t>& tokens, int32_t first_position,
                              int32_t sequence = 0) {
        return testing::forward_tokens(model, *cache_, tokens, first_position, sequence);
    }

    // Greedy decoding from `prompt` on `model` against llama.cpp's `expected` continuation (its first
    // greedy_steps tokens). Returns the step of the first divergence (the length followed if none) after
    // checking that llama.cpp's margin there was below `near_tie`.
    size_t follow_greedy(Model& model, const nlohmann::json& prompt, const nlohmann::json& reference, float near_tie) {
        const auto tokens = prompt["tokens"].get<std::vector<int32_t>>();
        auto expected = reference["greedy_tokens"].get<std::vector<int32_t>>();
        expected.resize(greedy_steps(expected.size()));
        const auto margins = reference["greedy_margins"].get<std::vector<float>>();
        cache_->release(0);
        auto logits = run_on(model, tokens, 0);
        size_t step = 0;
        for (; step < expected.size(); ++step) {
            const int32_t next = greedy_token(logits);
            if (next != expected[step]) break;
            logits = run_on(model, {next}, static_cast<int32_t>(tokens.size() + step));
        }
        const std::string name = prompt["name"];
        if (step < expected.size()) {
            std::printf("  %-16s diverges at step %2zu: llama.cpp's top-2 margin there %.4f\n", name.c_str(), step,
                        margins[step]);
            EXPECT_LT(margins[step], near_tie) << name << " diverges at step " << step << " without a near-tie";
        }
        return step;
    }

    static inline std::unique_ptr<LoadedModel> loaded_;
    static inline std::unique_ptr<Model> dequantized_;
    Model* model_ = nullptr;
    int64_t vocab_ = 0;
    std::unique_ptr<KvBlockPool> cache_;
};

TEST_F(LlamaOracle, LastPositionLogitsMatchLlamaCpp) {
    const auto fixture = load_json("prompts.json");
    const auto reference = testing::read_f16_file(testing::fixture_dir("model") / "last_logits.f16");
    const auto& prompts = fixture["prompts"];
    ASSERT_EQ(reference.size(), prompts.size() * static_cast<size_t>(vocab_));
    float worst = 0.0f;
    int top1_agree = 0;
    for (size_t p = 0; p < prompts.size(); ++p) {
        const auto tokens = prompts[p]["tokens"].get<std::vector<int32_t>>();
        cache_->release(0);
        const auto logits = run(tokens, 0);
        const float* expected = &reference[p * static_cast<size_t>(vocab_)];
        float max_delta = 0.0f;
        for (int64_t v = 0; v < vocab_; ++v) max_delta = std::max(max_delta, std::fabs(logits[v] - expected[v]));
        const int32_t ours = greedy_token(logits);
        const int32_t theirs = greedy_token(std::span<const float>(expected, static_cast<size_t>(vocab_)));
        top1_agree += ours == theirs;
        worst = std::max(worst, max_delta);
        EXPECT_LT(expected[theirs] - expected[ours], kNearTieMargin) << prompts[p]["name"] << ": top-1 differs";
        EXPECT_LE(max_delta, kLogitTolerance) << prompts[p]["name"];
        std::printf("  %-16s %3zu tokens  max|dlogit| %.4f  top-1 %s (llama.cpp margin %.4f)\n",
                    prompts[p]["name"].get<std::string>().c_str(), tokens.size(), max_delta,
                    ours == theirs ? "same" : "differs", expected[theirs] - expected[ours]);
    }
    std::printf("max |dlogit| over %zu prompts: %.4f; top-1 agreement %d/%zu\n", prompts.size(), worst, top1_agree,
                prompts.size());
}

TEST_F(LlamaOracle, GreedyContinuationsDivergeOnlyAfterNearTies) {
    const auto fixture = load_json("prompts.json");
    int identical = 0;
    for (const auto& prompt : fixture["prompts"]) {
        identical +=
            follow_greedy(*model_, prompt, prompt, kNearTieMargin) == greedy_steps(prompt["greedy_tokens"].size());
    }
    std::printf("identical greedy continuations (%zu tokens): %d/%zu\n", greedy_steps(64), identical,
                fixture["prompts"].size());
    EXPECT_GE(identical, kIdenticalGreedyContinuations);
}

// The float32 copy's 64-token greedy continuations: Smollm2/FamilyOracle.Float32CopyGreedyContinuationsMatchLlamaCpp
// (model_family_oracle_test.cpp), over all 22 prompts where this file's fixture kept 8.

// Protocol (the fixture's): non-overlapping windows from position 0, no BOS, every token after the
// first of a window scored. Each window is prefilled in chunks, which also exercises chunked prefill.
TEST_F(LlamaOracle, PerplexityWithinOnePercentOfLlamaCpp) {
    const auto fixture = load_json("perplexity.json");
    const auto tokens = fixture["tokens"].get<std::vector<int32_t>>();
    const int64_t window = fixture["window"], windows = fixture["windows"];
    constexpr int64_t kChunk = 128;
    std::vector<float> logits(static_cast<size_t>(kChunk * vocab_));
    double total_nll = 0.0;
    int64_t scored = 0;
    for (int64_t w = 0; w < windows; ++w) {
        cache_->release(0);
        ASSERT_TRUE(cache_->ensure_capacity(0, window));
        for (int64_t begin = 0; begin < window; begin += kChunk) {
            Batch batch;
            for (int64_t i = begin; i < std::min(window, begin + kChunk); ++i) {
                batch.add(tokens[static_cast<size_t>(w * window + i)], static_cast<int32_t>(i), 0, true);
            }
            ASSERT_TRUE(model_->forward(batch, *cache_, logits.data()).ok());
            for (int64_t i = 0; i < batch.size(); ++i) {
                const int64_t next = begin + i + 1;
                if (next >= window) break;
                const float* row = &logits[static_cast<size_t>(i * vocab_)];
                const float max_logit = *std::max_element(row, row + vocab_);
                double sum = 0.0;
                for (int64_t v = 0; v < vocab_; ++v) sum += std::exp(static_cast<double>(row[v] - max_logit));
                const int32_t target = tokens[static_cast<size_t>(w * window + next)];
                total_nll += std::log(sum) - static_cast<double>(row[target] - max_logit);
                ++scored;
            }
        }
    }
    const double ours = std::exp(total_nll / static_cast<double>(scored));
    const double theirs = fixture["perplexity"];
    std::printf("perplexity over %lld tokens: ours %.4f, llama.cpp %.4f (%+.3f%%)\n", static_cast<long long>(scored),
                ours, theirs, 100.0 * (ours - theirs) / theirs);
    EXPECT_EQ(scored, windows * (window - 1));
    EXPECT_NEAR(ours, theirs, kPerplexityRelativeTolerance * theirs);
}

// llama.cpp on a float32 copy of the model against ours with ModelOptions::dequantize_weights: the same
// float32 weights and no activation quantization on either side, so only summation order and llama.cpp's
// f16 rounding inside attention remain.
TEST_F(LlamaOracle, DequantizedModelMatchesLlamaCppOnFloat32Copy) {
    Model& dequantized = dequantized_model();
    const auto fixture = load_json("prompts.json");
    const auto reference = testing::read_f32_file(testing::fixture_dir("model") / "last_logits_dequantized.f32");
    const size_t prompts = reference.size() / static_cast<size_t>(vocab_);
    ASSERT_GT(prompts, 0u);
    float worst = 0.0f;
    for (size_t p = 0; p < prompts; ++p) {
        const auto tokens = fixture["prompts"][p]["tokens"].get<std::vector<int32_t>>();
        cache_->release(0);
        ASSERT_TRUE(cache_->ensure_capacity(0, static_cast<int64_t>(tokens.size())));
        Batch batch;
        for (size_t i = 0; i < tokens.size(); ++i)
            batch.add(tokens[i], static_cast<int32_t>(i), 0, i + 1 == tokens.size());
        std::vector<float> logits(static_cast<size_t>(vocab_));
        ASSERT_TRUE(dequantized.forward(batch, *cache_, logits.data()).ok());
        const float* expected = &reference[p * static_cast<size_t>(vocab_)];
        float max_delta = 0.0f;
        for (int64_t v = 0; v < vocab_; ++v) max_delta = std::max(max_delta, std::fabs(logits[v] - expected[v]));
        worst = std::max(worst, max_delta);
        EXPECT_LE(max_delta, kDequantizedLogitTolerance) << fixture["prompts"][p]["name"];
    }
    std::printf("dequantized model: max |dlogit| over %zu prompts: %.4f\n", prompts, worst);
}

// Two sequences in one step (one decoding, one prefilling) give what each gives alone.
TEST_F(LlamaOracle, MixedBatchMatchesSeparateRuns) {
    const auto fixture = load_json("prompts.json");
    const auto first = fixture["prompts"][0]["tokens"].get<std::vector<int32_t>>();
    const auto second = fixture["prompts"][1]["tokens"].get<std::vector<int32_t>>();
    const int32_t next = fixture["prompts"][0]["greedy_tokens"][0];
    (void)run(first, 0, 0);
    const auto alone_next = run({next}, static_cast<int32_t>(first.size()), 0);
    const auto alone_second = run(second, 0, 1);
    cache_->release(0);
    cache_->release(1);

    (void)run(first, 0, 0);
    ASSERT_TRUE(cache_->ensure_capacity(0, static_cast<int64_t>(first.size()) + 1));
    ASSERT_TRUE(cache_->ensure_capacity(1, static_cast<int64_t>(second.size())));
    Batch batch;
    batch.add(next, static_cast<int32_t>(first.size()), 0, true);
    for (size_t i = 0; i < second.size(); ++i) batch.add(second[i], static_cast<int32_t>(i), 1, i + 1 == second.size());
    std::vector<float> logits(static_cast<size_t>(2 * vocab_));
    ASSERT_TRUE(model_->forward(batch, *cache_, logits.data()).ok());
    float max_delta = 0.0f;
    for (int64_t v = 0; v < vocab_; ++v) {
        max_delta = std::max(max_delta, std::fabs(logits[v] - alone_next[v]));
        max_delta = std::max(max_delta, std::fabs(logits[vocab_ + v] - alone_second[v]));
    }
    // The matmul kernels reduce each output in the same order whatever the batch, so this is exact.
    EXPECT_EQ(max_delta, 0.0f);
}

}  // namespace model_llama_oracle_test
}  // namespace
}  // namespace tempered
