// Reasoning through the whole Engine over the fake model (engine_test_support.h), which never closes
// </think> by itself, like the random-weight R1 model: the text split into reasoning_text and text, the
// budget's forced end appended without drawing, the finishing delta's report, usage and the grammar
// that starts at the first content token.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine.h"
#include "engine_test_support.h"
#include "grammar/constraint.h"
#include "grammar/json_schema.h"
#include "server/structured_output.h"

namespace tempered {
namespace {
namespace engine_reasoning_test {

using testing::kThinkEnd;
using testing::kThinkStart;
using testing::thinking_tokenizer;

struct Answer {
    std::vector<int32_t> tokens;
    std::string reasoning;
    std::string content;
    std::optional<ReasoningReport> report;
    std::optional<FinishReason> finish;
    GenerationUsage usage;
    size_t logprobs = 0;
};

Answer collect_answer(GenerationStream& stream) {
    Answer out;
    for (;;) {
        auto event = stream.next(std::chrono::milliseconds(50));
        if (!event) continue;
        for (const ChoiceDelta& delta : event->deltas) {
            out.tokens.insert(out.tokens.end(), delta.tokens.begin(), delta.tokens.end());
            out.reasoning += delta.reasoning_text;
            out.content += delta.text;
            out.logprobs += delta.logprobs.size();
            if (delta.reasoning) out.report = delta.reasoning;
            if (delta.finish) out.finish = delta.finish;
        }
        if (event->done) {
            out.usage = event->usage;
            return out;
        }
    }
}

// "x<think>": a prompt whose template opened reasoning.
GenerationOptions thinking_request(int64_t max_tokens, std::optional<int64_t> budget) {
    GenerationOptions options;
    options.prompt = {'x', kThinkStart};
    options.max_tokens = max_tokens;
    options.sampling.temperature = 0.0f;
    options.reasoning.markers = reasoning::ThinkTokens{kThinkStart, kThinkEnd};
    options.reasoning.prompt_opens_reasoning = true;
    options.reasoning.budget = budget;
    options.reasoning.forced_end = {'\n', kThinkEnd, '\n'};
    return options;
}

class EngineReasoning : public ::testing::Test {
protected:
    Answer run(GenerationOptions options) { return collect_answer(*engine_.submit(std::move(options)).stream); }

    Tokenizer tokenizer_ = thinking_tokenizer();
    testing::FakeModel model_{tokenizer_.vocab_size()};
    std::unique_ptr<KvBlockPool> pool_ = testing::tiny_pool(32);
    Engine engine_{model_, tokenizer_, *pool_, EngineOptions{}, nullptr};
};

// The fake model follows each letter with the next; after <think> (not a letter) it starts at 'a'.
TEST_F(EngineReasoning, ABudgetForcesTheEndAfterExactlyThatManyTokensAndContentFollows) {
    GenerationOptions options = thinking_request(10, 3);
    options.top_logprobs = 0;
    const Answer answer = run(std::move(options));
    EXPECT_EQ(answer.tokens, (std::vector<int32_t>{'a', 'b', 'c', '\n', kThinkEnd, '\n', 'a', 'b', 'c', 'd'}));
    EXPECT_EQ(answer.reasoning, "abc\n");
    EXPECT_EQ(answer.content, "\nabcd");
    ASSERT_TRUE(answer.report);
    EXPECT_TRUE(answer.report->reasoned);
    EXPECT_EQ(answer.report->tokens, 3);
    EXPECT_EQ(answer.report->budget, 3);
    EXPECT_EQ(answer.report->forced_end, ForcedEnd::Budget);
    EXPECT_EQ(answer.report->reasoning_tokens, 5);
    EXPECT_EQ(answer.finish, FinishReason::Length);
    EXPECT_EQ(answer.usage.completion_tokens, 10) << "forced tokens count";
    EXPECT_EQ(answer.logprobs, 10u) << "forced tokens carry the model's logprob too";
}

// With speculation on, the forced end ("\n</think>\n") is known before it is appended: it is verified as three
// drafts in the step after the budget's last token, all accepted, and the answer is the one above.
TEST_F(EngineReasoning, WithSpeculationTheForcedEndIsVerifiedAsDraftsAllAccepted) {
    testing::CountingObserver log;
    EngineOptions options;
    options.speculative_tokens = 4;
    std::vector<int32_t> tokens;
    {
        testing::FakeModel model{tokenizer_.vocab_size()};
        auto pool = testing::tiny_pool(32);
        Engine engine(model, tokenizer_, *pool, options, &log);
        tokens = collect_answer(*engine.submit(thinking_request(10, 3)).stream).tokens;
    }
    EXPECT_EQ(tokens, (std::vector<int32_t>{'a', 'b', 'c', '\n', kThinkEnd, '\n', 'a', 'b', 'c', 'd'}));
    const auto steps = log.speculation_steps();
    ASSERT_FALSE(steps.empty());
    EXPECT_EQ(steps.front(), (std::pair<int64_t, int64_t>{3, 3}));  // "abc" has no earlier n-gram to draft from
}

TEST_F(EngineReasoning, SmallMaxTokensStillLeavesContent) {
    const Answer answer = run(thinking_request(6, std::nullopt));
    EXPECT_EQ(answer.tokens, (std::vector<int32_t>{'a', 'b', '\n', kThinkEnd, '\n', 'a'}));
    EXPECT_EQ(answer.content, "\na");
    ASSERT_TRUE(answer.report);
    EXPECT_EQ(answer.report->forced_end, ForcedEnd::MaxTokens);
    EXPECT_EQ(answer.report->tokens, 2);
}

TEST_F(EngineReasoning, AStreamThatEndsInsideReasoningGivesAllOfIt) {
    const Answer answer = run(thinking_request(1, std::nullopt));
    EXPECT_EQ(answer.tokens, (std::vector<int32_t>{'\n'}));
    EXPECT_EQ(answer.reasoning, "\n");
    EXPECT_EQ(answer.content, "");
}

TEST_F(EngineReasoning, StopStringsApplyToContentOnly) {
    GenerationOptions options = thinking_request(10, 3);
    options.stop = {"b"};
    const Answer answer = run(std::move(options));
    EXPECT_EQ(answer.reasoning, "abc\n") << "a stop string inside reasoning does not end the answer";
    EXPECT_EQ(answer.content, "\na");
    EXPECT_EQ(answer.finish, FinishReason::Stop);
    ASSERT_TRUE(answer.report);
}

TEST_F(EngineReasoning, WithoutReasoningOptionsMarkersAreText) {
    GenerationOptions options = thinking_request(3, 0);
    options.reasoning = {};
    const Answer answer = run(std::move(options));
    EXPECT_EQ(answer.content, "abc");
    EXPECT_FALSE(answer.report);
}

// The grammar allows only "zz" (quoted): inside reasoning the model's own letters come out; the grammar
// takes over at the first drawn content token.
TEST_F(EngineReasoning, TheGrammarStartsAtTheFirstContentToken) {
    auto schema = grammar::compile_json_schema(nlohmann::ordered_json::parse(R"({"enum":["zz"]})"));
    ASSERT_TRUE(schema);
    auto vocabulary =
        std::make_shared<const grammar::GrammarVocabulary>(grammar_vocabulary(tokenizer_, tokenizer_.vocab_size()));
    GenerationOptions options = thinking_request(12, 2);
    options.constraint = std::make_shared<const grammar::Constraint>(std::move(schema).value(), vocabulary);
    const Answer answer = run(std::move(options));
    EXPECT_EQ(answer.reasoning, "ab\n");
    EXPECT_EQ(answer.content, "\n\"zz\"");
    EXPECT_EQ(answer.finish, FinishReason::Stop);
}

// The fake model thinks "abc…z" over and over (a loop of period 26) and never closes </think>. A guard
// whose action would stop the choice ends the reasoning instead, so the answer still comes; a flag only
// reports the loop, and the reasoning runs on until max_tokens forces its end.
struct LoopAnswer {
    Answer answer;
    std::optional<DegenerationReport> degeneration;
};

LoopAnswer run_thinking_loop(Engine& engine, DegenerationAction action, int64_t max_tokens = 60) {
    GenerationOptions options = thinking_request(max_tokens, std::nullopt);
    options.guard.action = action;
    options.guard.detector = {32, 1, 2};
    auto stream = engine.submit(std::move(options)).stream;
    LoopAnswer out;
    for (;;) {
        auto event = stream->next(std::chrono::milliseconds(50));
        if (!event) continue;
        for (const ChoiceDelta& delta : event->deltas) {
            out.answer.tokens.insert(out.answer.tokens.end(), delta.tokens.begin(), delta.tokens.end());
            out.answer.reasoning += delta.reasoning_text;
            out.answer.content += delta.text;
            if (delta.reasoning) out.answer.report = delta.reasoning;
            if (delta.degeneration) out.degeneration = delta.degeneration;
            if (delta.finish) out.answer.finish = delta.finish;
        }
        if (event->done) return out;
    }
}

TEST_F(EngineReasoning, ALoopInsideReasoningEndsTheReasoningInsteadOfTheAnswer) {
    for (DegenerationAction action : {DegenerationAction::Stop, DegenerationAction::Resample}) {
        const LoopAnswer run = run_thinking_loop(engine_, action);
        ASSERT_TRUE(run.degeneration) << degeneration_action_name(action);
        EXPECT_EQ(run.degeneration->phase, DegenerationPhase::Reasoning);
        EXPECT_EQ(run.degeneration->loop.period, 26);
        EXPECT_EQ(run.degeneration->loop.detected_at_token, 51);
        ASSERT_TRUE(run.answer.report);
        EXPECT_EQ(run.answer.report->forced_end, ForcedEnd::Loop);
        EXPECT_EQ(run.answer.report->tokens, 52);
        ASSERT_GE(run.answer.tokens.size(), 55u);
        EXPECT_EQ(std::vector<int32_t>(run.answer.tokens.begin() + 52, run.answer.tokens.begin() + 55),
                  (std::vector<int32_t>{'\n', kThinkEnd, '\n'}));
        // Not stopped: content follows (drawn greedily to max_tokens, or at the fallback's 0.7 until the
        // fake model's close second, end of text, comes up).
        EXPECT_NE(run.answer.finish, FinishReason::Repetition);
        EXPECT_NE(run.answer.content.find_first_not_of('\n'), std::string::npos) << run.answer.content;
    }
}

// After the reasoning's loop ended it, the answer is watched afresh: its own loop (the fake model's
// alphabet again, from token 55) stops the choice, reported from the output's start.
TEST_F(EngineReasoning, AfterALoopEndedTheReasoningTheAnswerIsWatchedAgain) {
    const LoopAnswer run = run_thinking_loop(engine_, DegenerationAction::Stop, 200);
    ASSERT_TRUE(run.answer.report);
    EXPECT_EQ(run.answer.report->forced_end, ForcedEnd::Loop);
    ASSERT_TRUE(run.degeneration);
    EXPECT_EQ(run.degeneration->phase, DegenerationPhase::Content);
    EXPECT_EQ(run.degeneration->loop.detected_at_token, 55 + 51);
    EXPECT_EQ(run.answer.finish, FinishReason::Repetition);
    EXPECT_EQ(run.answer.tokens.size(), 107u);
}

TEST_F(EngineReasoning, AFlaggedLoopInsideReasoningChangesNothing) {
    const LoopAnswer run = run_thinking_loop(engine_, DegenerationAction::Flag);
    ASSERT_TRUE(run.degeneration);
    EXPECT_EQ(run.degeneration->phase, DegenerationPhase::Reasoning);
    ASSERT_TRUE(run.answer.report);
    EXPECT_EQ(run.answer.report->forced_end, ForcedEnd::MaxTokens);
    EXPECT_EQ(run.answer.report->tokens, 56);
}

}  // namespace engine_reasoning_test
}  // namespace
}  // namespace tempered
