// The server's reasoning set-up (settings/reasoning_settings.h): --reasoning-effort-budgets parsing, the
// parser chosen per --reasoning-parser on the real R1 distill vocabulary and template
// (build/tiny-models/tiny-r1-qwen2*.gguf), the forced end's ids, and which budget a request runs under.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "formats/gguf.h"
#include "model_test_support.h"
#include "server/chat_reasoning.h"
#include "settings/reasoning_settings.h"
#include "tiny_r1_model.h"
#include "tokenizer/tokenizer.h"

namespace tempered {
namespace {
namespace server_reasoning_settings_test {

TEST(ReasoningEffortBudgets, DefaultsAndOverrides) {
    auto defaults = parse_effort_budgets("");
    ASSERT_TRUE(defaults);
    EXPECT_EQ(defaults->budget_for(api::ReasoningEffort::Low), 256);
    EXPECT_EQ(defaults->budget_for(api::ReasoningEffort::Medium), 1024);
    EXPECT_EQ(defaults->budget_for(api::ReasoningEffort::High), 4096);
    auto some = parse_effort_budgets("high=9000,low=0");
    ASSERT_TRUE(some);
    EXPECT_EQ(some->low, 0);
    EXPECT_EQ(some->medium, 1024);
    EXPECT_EQ(some->high, 9000);
}

TEST(ReasoningEffortBudgets, MalformedPartsAreNamed) {
    for (const char* bad : {"low", "low=", "low=-1", "extreme=5", "medium=12x", "low=1,,"}) {
        auto parsed = parse_effort_budgets(bad);
        ASSERT_FALSE(parsed) << bad;
        EXPECT_NE(parsed.error().message.find("--reasoning-effort-budgets"), std::string::npos);
    }
}

class R1Setup : public ::testing::Test {
protected:
    void load(const std::string& name) {
        testing::TinyR1Model model;
        testing::load_tiny_r1_model(name, model);
        file_ = std::move(model.file);
        tokenizer_ = std::move(model.tokenizer);
        chat_template_ = model.chat_template;
    }

    ReasoningSetup choose(const std::string& parser) const {
        ReasoningSettings settings;
        settings.parser = parser;
        return choose_reasoning(settings, chat_template_, *tokenizer_);
    }

    std::unique_ptr<GgufFile> file_;
    std::unique_ptr<Tokenizer> tokenizer_;
    std::string chat_template_;
};

TEST_F(R1Setup, AutoFindsTheParserAndTheForcedEndIsThreeTokens) {
    load("tiny-r1-qwen2.gguf");
    if (!tokenizer_) return;
    const ReasoningSetup setup = choose("auto");
    ASSERT_TRUE(setup.parser);
    EXPECT_EQ(*setup.parser, reasoning::ReasoningParserKind::DeepSeekR1);
    EXPECT_EQ(setup.markers.start, 151648);
    EXPECT_EQ(setup.markers.end, 151649);
    // "\n", "</think>", "\n\n" in Qwen2's vocabulary.
    EXPECT_EQ(setup.forced_end, (std::vector<int32_t>{198, 151649, 271}));
    EXPECT_NE(setup.why.find("deepseek_r1"), std::string::npos) << setup.why;
}

TEST_F(R1Setup, NoneTurnsTheSplitOff) {
    load("tiny-r1-qwen2.gguf");
    if (!tokenizer_) return;
    EXPECT_FALSE(choose("none").parser);
    ReasoningSettings settings;
    settings.parser = "none";
    api::ChatRequest request;
    request.thinking_token_budget = 5;
    EXPECT_FALSE(reasoning_options(choose("none"), settings, request, {151648}).enabled());
}

TEST_F(R1Setup, ARequestBudgetWinsOverEffortWhichWinsOverTheServerDefault) {
    load("tiny-r1-qwen2.gguf");
    if (!tokenizer_) return;
    const ReasoningSetup setup = choose("auto");
    ReasoningSettings settings;
    settings.budget = 77;
    const std::vector<int32_t> opened = {1, setup.markers.start, 198};
    api::ChatRequest request;
    ReasoningOptions plain = reasoning_options(setup, settings, request, opened);
    EXPECT_TRUE(plain.enabled());
    EXPECT_TRUE(plain.prompt_opens_reasoning);
    EXPECT_EQ(plain.budget, 77);
    EXPECT_EQ(plain.forced_end, setup.forced_end);
    request.reasoning_effort = api::ReasoningEffort::Low;
    EXPECT_EQ(reasoning_options(setup, settings, request, opened).budget, 256);
    request.thinking_token_budget = 3;
    EXPECT_EQ(reasoning_options(setup, settings, request, opened).budget, 3);
    settings.budget.reset();
    request = {};
    EXPECT_EQ(reasoning_options(setup, settings, request, {1, 2}).budget, std::nullopt);
    EXPECT_FALSE(reasoning_options(setup, settings, request, {1, 2}).prompt_opens_reasoning);
}

}  // namespace server_reasoning_settings_test
}  // namespace
}  // namespace tempered
