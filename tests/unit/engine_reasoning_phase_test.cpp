// The reasoning phase of one choice (engine/reasoning_phase.h) as a state machine, token by token: the
// budget's forced end, the max_tokens rule that keeps room for content, its edge cases, the loop entry
// point, the end-of-generation mask and where the grammar starts. A small driver plays the postprocessor:
// it asks for a forced token, else "draws" the model's next token from a script.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "engine/reasoning_phase.h"

namespace tempered {
namespace {
namespace engine_reasoning_phase_test {

constexpr int32_t kStart = 100;  // <think>
constexpr int32_t kEnd = 101;    // </think>
constexpr int32_t kNewline = 10;
constexpr int32_t kDoubleNewline = 11;
constexpr int32_t kWord = 50;  // any ordinary token
const std::vector<int32_t> kForcedEnd = {kNewline, kEnd, kDoubleNewline};

ReasoningOptions options(bool prompt_opens, std::optional<int64_t> budget) {
    ReasoningOptions out;
    out.markers = reasoning::ThinkTokens{kStart, kEnd};
    out.prompt_opens_reasoning = prompt_opens;
    out.budget = budget;
    out.forced_end = kForcedEnd;
    return out;
}

struct Step {
    int32_t token;
    bool forced;
    bool end_masked;  // end of generation was masked for this step
};

// Runs a choice to max_tokens; the "model" draws `model_token` every step it is asked to.
std::vector<Step> run(ReasoningPhase& phase, int64_t max_tokens, int32_t model_token = kWord) {
    std::vector<Step> steps;
    for (int64_t generated = 0; generated < max_tokens; ++generated) {
        const bool masked = phase.masks_end_of_generation();
        const std::optional<int32_t> forced = phase.forced_token(generated, max_tokens);
        const int32_t token = forced.value_or(model_token);
        phase.on_token(token, forced.has_value(), "t");
        steps.push_back({token, forced.has_value(), masked});
    }
    return steps;
}

std::vector<int32_t> tokens_of(const std::vector<Step>& steps) {
    std::vector<int32_t> out;
    for (const Step& step : steps) out.push_back(step.token);
    return out;
}

TEST(ReasoningPhase, BudgetGivesExactlyThatManyDrawnTokensThenTheForcedEndThenContent) {
    ReasoningPhase phase(options(/*prompt_opens=*/true, /*budget=*/4));
    const auto steps = run(phase, 10);
    EXPECT_EQ(tokens_of(steps),
              (std::vector<int32_t>{kWord, kWord, kWord, kWord, kNewline, kEnd, kDoubleNewline, kWord, kWord, kWord}));
    for (size_t i = 4; i < 7; ++i) EXPECT_TRUE(steps[i].forced) << i;
    EXPECT_FALSE(steps[7].forced);
    EXPECT_TRUE(steps[7].end_masked) << "the first content token may not end the answer";
    EXPECT_FALSE(steps[8].end_masked);
    const ReasoningReport report = phase.report();
    EXPECT_TRUE(report.reasoned);
    EXPECT_EQ(report.tokens, 4);
    EXPECT_EQ(report.budget, 4);
    EXPECT_EQ(report.forced_end, ForcedEnd::Budget);
    EXPECT_EQ(report.reasoning_tokens, 6) << "four drawn, the forced newline and </think>";
    EXPECT_FALSE(phase.in_reasoning());
}

TEST(ReasoningPhase, BudgetZeroForcesTheEndAtOnce) {
    ReasoningPhase phase(options(true, 0));
    const auto steps = run(phase, 5);
    EXPECT_EQ(tokens_of(steps), (std::vector<int32_t>{kNewline, kEnd, kDoubleNewline, kWord, kWord}));
    EXPECT_EQ(phase.report().tokens, 0);
    EXPECT_EQ(phase.report().forced_end, ForcedEnd::Budget);
}

TEST(ReasoningPhase, MaxTokensLeavesRoomForTheForcedEndAndOneContentToken) {
    ReasoningPhase phase(options(true, std::nullopt));
    const auto steps = run(phase, 10);
    // 10 = 6 drawn + 3 forced + 1 content.
    EXPECT_EQ(tokens_of(steps),
              (std::vector<int32_t>{kWord, kWord, kWord, kWord, kWord, kWord, kNewline, kEnd, kDoubleNewline, kWord}));
    EXPECT_TRUE(steps[9].end_masked);
    EXPECT_EQ(phase.report().tokens, 6);
    EXPECT_EQ(phase.report().forced_end, ForcedEnd::MaxTokens);
    EXPECT_EQ(phase.report().budget, std::nullopt);
}

TEST(ReasoningPhase, ABudgetLargerThanTheRoomEndsByMaxTokens) {
    ReasoningPhase phase(options(true, 100));
    run(phase, 8);
    EXPECT_EQ(phase.report().tokens, 4);
    EXPECT_EQ(phase.report().forced_end, ForcedEnd::MaxTokens);
}

TEST(ReasoningPhase, MaxTokensExactlyTheForcedEndPlusOneDrawsNoReasoning) {
    ReasoningPhase phase(options(true, std::nullopt));
    const auto steps = run(phase, 4);
    EXPECT_EQ(tokens_of(steps), (std::vector<int32_t>{kNewline, kEnd, kDoubleNewline, kWord}));
    EXPECT_EQ(phase.report().tokens, 0);
}

// Defined behaviour when even the forced end does not fit: it starts at once and max_tokens cuts it.
TEST(ReasoningPhase, MaxTokensBelowTheForcedEndPlusOneCutsTheForcedEnd) {
    ReasoningPhase two(options(true, std::nullopt));
    EXPECT_EQ(tokens_of(run(two, 2)), (std::vector<int32_t>{kNewline, kEnd}));
    EXPECT_FALSE(two.in_reasoning());
    EXPECT_EQ(two.report().forced_end, ForcedEnd::MaxTokens);

    ReasoningPhase one(options(true, std::nullopt));
    EXPECT_EQ(tokens_of(run(one, 1)), (std::vector<int32_t>{kNewline}));
    EXPECT_TRUE(one.in_reasoning()) << "the output ends inside reasoning";
    const ReasoningText tail = one.finish("!");
    EXPECT_EQ(tail.reasoning, "!");
    EXPECT_EQ(tail.content, "");
}

TEST(ReasoningPhase, AModelThatClosesReasoningItselfHasNoForcedEnd) {
    ReasoningPhase phase(options(true, 10));
    const std::vector<int32_t> script = {kWord, kWord, kEnd, kWord};
    for (size_t i = 0; i < script.size(); ++i) {
        ASSERT_FALSE(phase.forced_token(static_cast<int64_t>(i), 100));
        if (i == 3) {
            EXPECT_TRUE(phase.masks_end_of_generation()) << "first content token";
        }
        phase.on_token(script[i], false, "t");
    }
    EXPECT_FALSE(phase.masks_end_of_generation());
    EXPECT_EQ(phase.report().tokens, 2) << "the closing marker is not a drawn reasoning token";
    EXPECT_EQ(phase.report().forced_end, std::nullopt);
    EXPECT_EQ(phase.report().reasoning_tokens, 3);
}

TEST(ReasoningPhase, AModelThatOpensReasoningItselfIsBudgetedFromThere) {
    ReasoningPhase phase(options(/*prompt_opens=*/false, 2));
    EXPECT_FALSE(phase.in_reasoning());
    EXPECT_TRUE(phase.grammar_applies(false));
    EXPECT_FALSE(phase.masks_end_of_generation());
    EXPECT_FALSE(phase.forced_token(0, 100));
    phase.on_token(kStart, false, "<think>");
    EXPECT_TRUE(phase.in_reasoning());
    EXPECT_FALSE(phase.grammar_applies(false));
    EXPECT_TRUE(phase.masks_end_of_generation());
    const auto steps = run(phase, 6);  // continues from generated 0 for the driver; room is ample
    EXPECT_EQ(tokens_of(steps), (std::vector<int32_t>{kWord, kWord, kNewline, kEnd, kDoubleNewline, kWord}));
    EXPECT_EQ(phase.report().tokens, 2);
}

TEST(ReasoningPhase, AModelThatNeverReasonsIsLeftAlone) {
    ReasoningPhase phase(options(false, 0));
    const auto steps = run(phase, 5);
    for (const Step& step : steps) {
        EXPECT_FALSE(step.forced);
        EXPECT_FALSE(step.end_masked);
    }
    EXPECT_FALSE(phase.report().reasoned);
    EXPECT_EQ(phase.report().reasoning_tokens, 0);
}

TEST(ReasoningPhase, ALoopEndsReasoningByForceAndOnlyInsideReasoning) {
    ReasoningPhase phase(options(true, std::nullopt));
    phase.on_token(kWord, false, "t");
    phase.force_end(ForcedEnd::Loop);
    EXPECT_EQ(phase.forced_token(1, 100), kNewline);
    phase.force_end(ForcedEnd::Budget);  // already forcing: the reason stays
    phase.on_token(kNewline, true, "\n");
    EXPECT_EQ(phase.forced_token(2, 100), kEnd);
    phase.on_token(kEnd, true, "</think>");
    EXPECT_EQ(phase.forced_token(3, 100), kDoubleNewline);
    phase.on_token(kDoubleNewline, true, "\n\n");
    phase.force_end(ForcedEnd::Loop);  // in content now: nothing to end
    EXPECT_FALSE(phase.forced_token(4, 100));
    EXPECT_EQ(phase.report().forced_end, ForcedEnd::Loop);
    EXPECT_EQ(phase.report().tokens, 1);
}

TEST(ReasoningPhase, NoGrammarInsideReasoningNorDuringTheForcedEnd) {
    ReasoningPhase phase(options(true, 0));
    EXPECT_FALSE(phase.grammar_applies(false));
    for (int64_t i = 0; i < 3; ++i) {
        const auto token = phase.forced_token(i, 100);
        ASSERT_TRUE(token);
        EXPECT_FALSE(phase.grammar_applies(false)) << i;
        phase.on_token(*token, true, "");
    }
    EXPECT_TRUE(phase.grammar_applies(false)) << "from the first drawn content token";
}

TEST(ReasoningPhase, TextGoesToItsSideAndMarkersToNeither) {
    ReasoningPhase phase(options(true, std::nullopt));
    EXPECT_EQ(phase.on_token(kWord, false, "Hmm").reasoning, "Hmm");
    const ReasoningText closing = phase.on_token(kEnd, false, "</think>");
    EXPECT_EQ(closing.reasoning, "");
    EXPECT_EQ(closing.content, "");
    EXPECT_EQ(phase.on_token(kWord, false, "Paris").content, "Paris");
}

TEST(ReasoningPhase, AForcedEndWithoutTheClosingMarkerFallsBackToTheMarkerAlone) {
    ReasoningOptions broken = options(true, 0);
    broken.forced_end = {kNewline, kNewline};
    ReasoningPhase phase(broken);
    EXPECT_EQ(tokens_of(run(phase, 3)), (std::vector<int32_t>{kEnd, kWord, kWord}));
    EXPECT_FALSE(phase.in_reasoning());
}

}  // namespace engine_reasoning_phase_test
}  // namespace
}  // namespace tempered
