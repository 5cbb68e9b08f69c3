// DRY against llama.cpp: tests/fixtures/sampling/dry.json holds, for synthetic logits over SmolLM2's
// vocabulary and several histories and parameters, every logit llama.cpp's own DRY sampler changed
// (scripts/fixtures/make_dry_fixture.py, through llama-cpp-python). Ours must change the same logits by the
// same amounts (1e-5 relative) and no others. The breakers are built from SmolLM2's token texts and our
// tokenizer, so the model is needed (skipped when absent, unless TEMPERED_REQUIRE_MODELS=1). The other tests
// need no model: the rules on small hand-checked histories, breaker building on a toy vocabulary, and the
// stage inside next_token.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "formats/gguf.h"
#include "sampling/dry.h"
#include "sampling/next_token.h"
#include "tokenizer/tokenizer.h"

#include "model_test_support.h"

namespace tempered {
namespace {
namespace sampling_dry_test {

// The fixture's logits: float32((t * 7919) % 2001 - 1000) / 128, exact in float32.
std::vector<float> synthetic_logits(size_t vocab) {
    std::vector<float> logits(vocab);
    for (size_t t = 0; t < vocab; ++t) {
        logits[t] = static_cast<float>(static_cast<int64_t>((t * 7919) % 2001) - 1000) / 128.0f;
    }
    return logits;
}

DryParams params_of(const nlohmann::json& row, std::shared_ptr<const DryBreakers> breakers) {
    DryParams params;
    params.multiplier = row["multiplier"].get<float>();
    params.base = row["base"].get<float>();
    params.allowed_length = row["allowed_length"].get<int32_t>();
    params.penalty_last_n = row["penalty_last_n"].get<int32_t>();
    params.breakers = std::move(breakers);
    return params;
}

std::shared_ptr<const Tokenizer> load_smollm2() {
    static std::shared_ptr<const Tokenizer> loaded;
    if (loaded) return loaded;
    const auto path = testing::model_dir() / "SmolLM2-135M-Instruct.Q4_1.gguf";
    auto file = GgufFile::open(path.string());
    if (!file.ok()) return nullptr;
    auto built = Tokenizer::from_gguf(*file);
    if (!built.ok()) return nullptr;
    loaded = std::make_shared<const Tokenizer>(std::move(*built));
    return loaded;
}

// What llama.cpp's detokenize gives for each token alone, special tokens rendered.
std::vector<std::string> token_texts(const Tokenizer& tokenizer) {
    std::vector<std::string> texts;
    for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) texts.push_back(tokenizer.decode({&id, 1}));
    return texts;
}

void expect_matches_reference(const std::vector<float>& ours, const nlohmann::json& penalized) {
    const std::vector<float> original = synthetic_logits(ours.size());
    size_t changed = 0;
    for (size_t t = 0; t < ours.size(); ++t) {
        const std::string key = std::to_string(t);
        if (!penalized.contains(key)) {
            EXPECT_EQ(ours[t], original[t]) << "token " << t << " should be untouched";
            continue;
        }
        ++changed;
        const float expected = penalized[key].get<float>();
        EXPECT_NEAR(ours[t], expected, 1e-5 * std::max(1.0f, std::fabs(expected))) << "token " << t;
    }
    EXPECT_EQ(changed, penalized.size());
}

TEST(DryReference, PenaltiesEqualLlamaCppOnEveryCase) {
    TEMPERED_MODEL_OR_SKIP(model_path, "SmolLM2-135M-Instruct.Q4_1.gguf");
    const auto fixture = nlohmann::json::parse(testing::read_text_file(testing::fixture_dir("sampling") / "dry.json"));
    const auto tokenizer = load_smollm2();
    ASSERT_TRUE(tokenizer);
    ASSERT_EQ(tokenizer->vocab_size(), fixture["n_vocab"].get<int32_t>());
    const std::vector<std::string> texts = token_texts(*tokenizer);
    const DryTokenize tokenize = [&](std::string_view text) { return tokenizer->encode(text, false, false); };

    ASSERT_GE(fixture["cases"].size(), 20u);
    DryWorkspace workspace;  // shared by all cases: a warm workspace must carry nothing over
    for (const auto& row : fixture["cases"]) {
        SCOPED_TRACE(row["name"].get<std::string>());
        const auto breaker_strings = row["breakers"].get<std::vector<std::string>>();
        auto breakers = std::make_shared<const DryBreakers>(make_dry_breakers(breaker_strings, texts, tokenize));
        const DryParams params = params_of(row, breakers);
        const auto history = row["history"].get<std::vector<int32_t>>();
        const auto split = row["prompt_length"].get<size_t>();
        const std::span<const int32_t> all(history);

        // The same history as prompt + output, as prompt only and as output only.
        for (size_t prompt_size : {split, history.size(), size_t{0}}) {
            std::vector<float> logits = synthetic_logits(texts.size());
            apply_dry(logits, params, all.first(prompt_size), all.subspan(prompt_size), workspace);
            expect_matches_reference(logits, row["penalized"]);
        }
    }
}

// Small histories over a vocabulary of 16, checked by hand.
struct DryRules : ::testing::Test {
    std::vector<float> penalties_after(const std::vector<int32_t>& history) {
        std::vector<float> logits(16, 0.0f);
        apply_dry(logits, params, {}, history, workspace);
        for (float& logit : logits) logit = -logit;
        return logits;
    }
    DryParams params{.multiplier = 0.5f, .base = 2.0f, .allowed_length = 2, .penalty_last_n = -1, .breakers = {}};
    DryWorkspace workspace;
};

TEST_F(DryRules, PenaltyGrowsByBaseWithEachTokenPastTheAllowedLength) {
    // 1 2 3 4 5 9 1 2 3 4 : emitting 5 would make "1 2 3 4 5" a repeat; the suffix "1 2 3 4" has length 4.
    const auto penalties = penalties_after({1, 2, 3, 4, 5, 9, 1, 2, 3, 4});
    EXPECT_FLOAT_EQ(penalties[5], 0.5f * 4.0f);  // 0.5 * 2^(4 - 2)
    for (int32_t t = 0; t < 16; ++t) {
        if (t != 5) {
            EXPECT_EQ(penalties[t], 0.0f) << t;
        }
    }
}

TEST_F(DryRules, ShorterThanAllowedLengthIsFree) {
    const auto penalties = penalties_after({1, 2, 9, 8, 1});
    for (float penalty : penalties) EXPECT_EQ(penalty, 0.0f);
}

TEST_F(DryRules, WindowCutsOffTheEarlierCopyAcrossPromptAndOutput) {
    const std::vector<int32_t> prompt = {1, 2, 3, 7}, output = {8, 1, 2};
    std::vector<float> whole(16, 0.0f), windowed(16, 0.0f);
    apply_dry(whole, params, prompt, output, workspace);
    EXPECT_FLOAT_EQ(whole[3], -0.5f);
    params.penalty_last_n = 5;  // 3 7 8 1 2: the earlier "1 2" is outside
    apply_dry(windowed, params, prompt, output, workspace);
    EXPECT_EQ(windowed[3], 0.0f);
}

TEST_F(DryRules, BreakerStopsTheSuffixAndIsNeverPenalized) {
    const std::vector<int32_t> history = {0, 3, 4, 5, 9, 0, 3, 4};
    EXPECT_FLOAT_EQ(penalties_after(history)[5], 1.0f);  // "0 3 4" then 5: 0.5 * 2^(3 - 2)
    auto breakers = std::make_shared<DryBreakers>();
    breakers->tails.emplace(0, std::vector<int32_t>{});
    params.breakers = breakers;
    auto penalties = penalties_after(history);
    EXPECT_FLOAT_EQ(penalties[5], 0.5f);  // only "3 4" after the breaker counts
    penalties = penalties_after({1, 2, 0, 9, 1, 2});
    EXPECT_EQ(penalties[0], 0.0f);  // "1 2" then the breaker: the breaker stays sayable
}

TEST_F(DryRules, OffUnlessMultiplierBaseAndWindowAllowIt) {
    for (auto change : {+[](DryParams& p) { p.multiplier = 0.0f; }, +[](DryParams& p) { p.base = 0.99f; },
                        +[](DryParams& p) { p.penalty_last_n = 0; }}) {
        DryParams saved = params;
        change(params);
        for (float penalty : penalties_after({1, 2, 3, 9, 1, 2})) EXPECT_EQ(penalty, 0.0f);
        params = saved;
    }
}

TEST(DryBreakersBuild, WholeTokensHeadsAndTails) {
    // Toy vocabulary: "<", "end", ">", "<end>", "x<e", "ab".
    const std::vector<std::string> texts = {"<", "end", ">", "<end>", "x<e", "ab"};
    const DryTokenize tokenize = [](std::string_view text) {
        if (text == "end>") return std::vector<int32_t>{1, 2};
        if (text == "nd>") return std::vector<int32_t>{5, 5};  // any tokenization: only compared
        return std::vector<int32_t>{};
    };
    const std::vector<std::string> strings = {"<end>", ""};
    const DryBreakers breakers = make_dry_breakers(strings, texts, tokenize);
    EXPECT_TRUE(breakers.is_whole_breaker(3));
    EXPECT_FALSE(breakers.is_whole_breaker(0));
    auto [first, last] = breakers.tails.equal_range(0);
    ASSERT_EQ(std::distance(first, last), 1);
    EXPECT_EQ(first->second, (std::vector<int32_t>{1, 2}));
    std::tie(first, last) = breakers.tails.equal_range(4);
    ASSERT_EQ(std::distance(first, last), 1);
    EXPECT_EQ(first->second, (std::vector<int32_t>{5, 5}));
    EXPECT_EQ(breakers.tails.count(1) + breakers.tails.count(2) + breakers.tails.count(5), 0u);
}

TEST(DryStage, RunsInsideNextTokenAndIsOffByDefault) {
    SamplingParams sampling;
    sampling.temperature = 0.0f;
    const PenaltyParams penalties;
    SamplerRng rng{1};
    NextTokenWorkspace workspace;
    const std::vector<float> logits = {0.0f, 0.0f, 0.0f, 1.0f};
    const std::vector<int32_t> output = {3, 1, 2, 0, 1, 2};  // "1 2" then 0 before: 0 would repeat it
    TokenHistory history;
    history.output = output;
    std::vector<float> raised = logits;
    raised[0] = 1.5f;  // token 0 now leads by 0.5
    EXPECT_EQ(next_token(raised, {sampling, penalties, -1}, history, rng, workspace).token, 0);
    const DryParams dry{.multiplier = 1.0f, .base = 1.75f, .allowed_length = 2, .penalty_last_n = -1, .breakers = {}};
    EXPECT_EQ(next_token(raised, {sampling, penalties, -1, dry}, history, rng, workspace).token, 3);
}

}  // namespace sampling_dry_test
}  // namespace
}  // namespace tempered
