// The degeneration guard: SequenceGuard's state machine on synthetic token streams (flag, stop, resample,
// off, the repeats a flagged loop reaches, the loop after a resample), the default thresholds on SmolLM2's
// tokens of a looping answer and of ordinary ones, and the whole engine over the fake model, whose greedy
// output is the alphabet over and over (a loop of period 26).
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/degeneration_guard.h"
#include "engine/engine.h"
#include "engine_test_support.h"
#include "formats/gguf.h"
#include "model_test_support.h"
#include "sampling/next_token.h"

namespace tempered {
namespace {
namespace engine_degeneration_guard_test {

DegenerationGuard guard_with(DegenerationAction action, int32_t max_pattern_size = 8, int32_t min_count = 3) {
    DegenerationGuard guard;
    guard.action = action;
    guard.detector = {max_pattern_size, 1, min_count};
    return guard;
}

// Feeds `stream` to a fresh SequenceGuard, the last token as the choice's finishing one; every outcome.
struct Fed {
    SequenceGuard guard;
    std::vector<SequenceGuard::Outcome> outcomes;
};

Fed feed(const DegenerationGuard& guard, const std::vector<int32_t>& stream, const SamplingParams& sampling = {}) {
    Fed fed;
    for (size_t i = 0; i < stream.size(); ++i) {
        const SequenceGuard::Step step{guard, sampling, kDryOff, DegenerationPhase::Content, i + 1 == stream.size()};
        fed.outcomes.push_back(fed.guard.observe(stream[i], step));
    }
    return fed;
}

// One token at a time: GCC 12 mistakes vector::insert of a short list for an overflow (-Wstringop-overflow).
void append(std::vector<int32_t>& stream, const std::vector<int32_t>& tokens) {
    for (const int32_t token : tokens) stream.push_back(token);
}

// "x y" then the block {1, 2, 3, 4} `copies` times, then "9 8 7 6 5" (the loop broken).
std::vector<int32_t> loop_stream(int copies, bool broken_after = true) {
    std::vector<int32_t> stream = {100, 101};
    for (int c = 0; c < copies; ++c) append(stream, {1, 2, 3, 4});
    if (broken_after) append(stream, {9, 8, 7, 6, 5});
    return stream;
}

TEST(SequenceGuard, FlagReportsTheLoopWhereItIsDetectedAndItsFinalRepeatsAtTheEnd) {
    const Fed fed = feed(guard_with(DegenerationAction::Flag), loop_stream(7));
    // Tokens 2..13 are the first three copies: the loop is seen on token 13.
    for (size_t i = 0; i < fed.outcomes.size(); ++i) {
        const auto& outcome = fed.outcomes[i];
        EXPECT_FALSE(outcome.stop_choice);
        EXPECT_EQ(outcome.detected.has_value(), i == 13) << i;
        const bool sends = i == 13 || i + 1 == fed.outcomes.size();
        EXPECT_EQ(outcome.send.has_value(), sends) << i;
    }
    const DegenerationReport& at_detection = *fed.outcomes[13].send;
    EXPECT_EQ(at_detection.loop.detected_at_token, 13);
    EXPECT_EQ(at_detection.loop.period, 4);
    EXPECT_EQ(at_detection.loop.repeats, 3);
    EXPECT_EQ(at_detection.action, DegenerationAction::Flag);
    EXPECT_EQ(fed.outcomes[13].detected->period, 4);
    // The loop went on to 7 copies and then broke; the finishing delta says 7, not what the broken tail has.
    const DegenerationReport& at_end = *fed.outcomes.back().send;
    EXPECT_EQ(at_end.loop.detected_at_token, 13);
    EXPECT_EQ(at_end.loop.repeats, 7);
    EXPECT_FALSE(at_end.resampled);
}

TEST(SequenceGuard, StopEndsTheChoiceOnTheDetectingToken) {
    const Fed fed = feed(guard_with(DegenerationAction::Stop), loop_stream(3, false));
    ASSERT_EQ(fed.outcomes.size(), 14u);
    // The detecting token is also the last one fed, so it is "finishing": stop has nothing left to end.
    EXPECT_FALSE(fed.outcomes.back().stop_choice);

    const Fed longer = feed(guard_with(DegenerationAction::Stop), loop_stream(5, false));
    EXPECT_TRUE(longer.outcomes[13].stop_choice);
    EXPECT_EQ(longer.outcomes[13].send->action, DegenerationAction::Stop);
    for (size_t i = 0; i < 13; ++i) EXPECT_FALSE(longer.outcomes[i].stop_choice);
}

TEST(SequenceGuard, OffOrADisabledDetectorSeesNothing) {
    for (const DegenerationGuard& guard :
         {guard_with(DegenerationAction::Off), guard_with(DegenerationAction::Stop, /*max_pattern_size=*/0)}) {
        const Fed fed = feed(guard, loop_stream(10));
        for (const auto& outcome : fed.outcomes) {
            EXPECT_FALSE(outcome.detected);
            EXPECT_FALSE(outcome.send);
        }
        EXPECT_FALSE(fed.guard.report());
    }
}

TEST(SequenceGuard, ResampleSwitchesToTheFallbackAndFlagsALaterLoopOnly) {
    DegenerationGuard guard = guard_with(DegenerationAction::Resample);
    guard.fallback.top_k = 40;
    SamplingParams request;
    request.temperature = 0.0f;
    request.top_p = 0.9f;
    request.logit_bias = {{7, -3.0f}};
    // A loop of 4 (seen on token 13), then noise, then a loop of period 2 from token 20 on.
    std::vector<int32_t> stream = loop_stream(3, false);
    append(stream, {50, 51, 52, 53, 54, 55, 60, 61, 60, 61, 60, 61, 62});
    const Fed fed = feed(guard, stream, request);

    ASSERT_TRUE(fed.outcomes[13].send);
    const DegenerationReport& first = *fed.outcomes[13].send;
    EXPECT_EQ(first.action, DegenerationAction::Resample);
    ASSERT_TRUE(first.resampled);
    EXPECT_EQ(first.resampled->replaced_sampling.temperature, 0.0f);
    EXPECT_EQ(first.resampled->sampling.temperature, 0.7f);
    EXPECT_EQ(first.resampled->sampling.top_k, 40);
    EXPECT_EQ(first.resampled->sampling.top_p, 0.9f);  // not in the fallback: the request's
    EXPECT_EQ(first.resampled->replaced_dry.multiplier, 0.0f);
    EXPECT_EQ(first.resampled->dry.multiplier, kFallbackDryMultiplier);
    EXPECT_EQ(first.resampled->dry.penalty_last_n, kFallbackDryPenaltyLastN);

    // From then on the sequence draws with the fallback (the logit bias kept), whatever the request says.
    const SamplingParams& now = fed.guard.sampling(request);
    EXPECT_EQ(now.temperature, 0.7f);
    EXPECT_EQ(now.logit_bias, request.logit_bias);
    EXPECT_EQ(fed.guard.dry(kDryOff).multiplier, kFallbackDryMultiplier);

    // The detector started over after token 13: "60 61" three times completes on token 25.
    for (size_t i = 14; i < 25; ++i) EXPECT_FALSE(fed.outcomes[i].detected) << i;
    ASSERT_TRUE(fed.outcomes[25].detected);
    EXPECT_EQ(fed.outcomes[25].detected->action, DegenerationAction::Flag);
    EXPECT_EQ(fed.outcomes[25].detected->period, 2);
    const DegenerationReport& second = *fed.outcomes[25].send;
    EXPECT_EQ(second.action, DegenerationAction::Resample);  // the first loop's, still
    ASSERT_TRUE(second.after_resample);
    EXPECT_EQ(second.after_resample->detected_at_token, 25);
    EXPECT_EQ(second.after_resample->period, 2);
    EXPECT_FALSE(fed.outcomes[25].stop_choice);
    EXPECT_EQ(fed.outcomes.back().send->after_resample->repeats, 3);
}

TEST(SequenceGuard, ActionNamesRoundTrip) {
    for (auto action :
         {DegenerationAction::Off, DegenerationAction::Flag, DegenerationAction::Stop, DegenerationAction::Resample})
        EXPECT_EQ(degeneration_action_from_name(degeneration_action_name(action)), action);
    EXPECT_FALSE(degeneration_action_from_name("halt"));
    EXPECT_STREQ(degeneration_phase_name(DegenerationPhase::Reasoning), "reasoning");
}

// --- the default thresholds, on SmolLM2's own tokens ---

std::shared_ptr<const Tokenizer> smollm2_tokenizer() {
    static std::shared_ptr<const Tokenizer> loaded;
    if (loaded) return loaded;
    auto file = GgufFile::open((testing::model_dir() / "SmolLM2-135M-Instruct.Q4_1.gguf").string());
    if (!file.ok()) return nullptr;
    auto built = Tokenizer::from_gguf(*file);
    if (!built.ok()) return nullptr;
    loaded = std::make_shared<const Tokenizer>(std::move(*built));
    return loaded;
}

std::optional<LoopSighting> first_loop_under_default_guard(const Tokenizer& tokenizer, const std::string& text) {
    const Fed fed = feed(default_degeneration_guard(), tokenizer.encode(text, false, false));
    for (const auto& outcome : fed.outcomes)
        if (outcome.detected) return outcome.send->loop;
    return std::nullopt;
}

TEST(DefaultDegenerationGuard, CatchesThePhraseLoopWithinAFewCopies) {
    TEMPERED_MODEL_OR_SKIP(model_path, "SmolLM2-135M-Instruct.Q4_1.gguf");
    const auto tokenizer = smollm2_tokenizer();
    ASSERT_TRUE(tokenizer);
    std::string text = "L'Étoile, la Cité, la Nation, la Culture";
    for (int i = 0; i < 12; ++i) text += ", la Femme";
    const auto loop = first_loop_under_default_guard(*tokenizer, text);
    ASSERT_TRUE(loop);
    EXPECT_EQ(loop->period, static_cast<int32_t>(tokenizer->encode(", la Femme", false, false).size()));
    EXPECT_LE(loop->repeats, 6);
}

TEST(DefaultDegenerationGuard, SparesOrdinaryListsCodeAndTables) {
    TEMPERED_MODEL_OR_SKIP(model_path, "SmolLM2-135M-Instruct.Q4_1.gguf");
    const auto tokenizer = smollm2_tokenizer();
    ASSERT_TRUE(tokenizer);
    const std::vector<std::string> answers = {
        "The capital of France is Paris. It is known for the Eiffel Tower, the Louvre and Notre-Dame.",
        "Here are some fruits:\n\n- Apples\n- Bananas\n- Cherries\n- Dates\n- Figs\n- Grapes\n- Kiwis\n",
        "1. Preheat the oven.\n2. Mix the flour and the sugar.\n3. Add the eggs.\n4. Bake for 20 minutes.\n",
        "| Name | Age | City |\n|------|-----|------|\n| Ann | 31 | Paris |\n| Bob | 27 | Lyon |\n"
        "| Eve | 45 | Nice |\n",
        "| a | b | c | d | e | f |\n|---|---|---|---|---|---|\n| 1 | 2 | 3 | 4 | 5 | 6 |\n",
        "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\n"
        "def mul(a, b):\n    return a * b\n",
        "int main() {\n    int x = 0;\n    int y = 0;\n    int z = 0;\n    return x + y + z;\n}\n",
        "{\n  \"a\": [1, 2, 3],\n  \"b\": {\"c\": null, \"d\": null},\n  \"e\": []\n}\n",
        "Row, row, row your boat, gently down the stream. Merrily, merrily, merrily, merrily, life is but a dream.",
        "==================== Results ====================\n",
    };
    for (const std::string& answer : answers) {
        const auto loop = first_loop_under_default_guard(*tokenizer, answer);
        EXPECT_FALSE(loop) << answer << "\nfired: period " << loop->period << " at " << loop->detected_at_token;
    }
}

// --- the whole engine, over the fake model ---

struct ChoiceOutcome {
    std::vector<int32_t> tokens;
    std::string text;
    std::optional<FinishReason> finish;
    std::vector<DegenerationReport> reports;  // every report its deltas carried, in order
    std::vector<size_t> report_at_token;      // how many tokens the choice had when each arrived
};

ChoiceOutcome run_one(Engine& engine, GenerationOptions options) {
    auto submitted = engine.submit(std::move(options));
    ChoiceOutcome out;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
    while (std::chrono::steady_clock::now() < deadline) {
        auto event = submitted.stream->next(std::chrono::milliseconds(50));
        if (!event) continue;
        for (const ChoiceDelta& delta : event->deltas) {
            out.tokens.insert(out.tokens.end(), delta.tokens.begin(), delta.tokens.end());
            out.text += delta.text;
            if (delta.finish) out.finish = delta.finish;
            if (delta.degeneration) {
                out.reports.push_back(*delta.degeneration);
                out.report_at_token.push_back(out.tokens.size());
            }
        }
        if (event->done) return out;
    }
    ADD_FAILURE() << "the stream did not finish";
    return out;
}

class CountingDegenerationObserver final : public EngineObserver {
public:
    void on_prefix_lookup(int64_t, int64_t) override {}
    void on_first_token(double) override {}
    void on_inter_token(double) override {}
    void on_preemption() override {}
    void on_request_finished(RequestOutcome outcome, const GenerationUsage&, const RequestTimings&) override {
        std::lock_guard lock(mutex_);
        outcomes.push_back(outcome);
    }
    void on_degeneration(DegenerationAction action, DegenerationPhase, int32_t period) override {
        std::lock_guard lock(mutex_);
        loops.push_back({action, period});
    }
    std::mutex mutex_;
    std::vector<RequestOutcome> outcomes;
    std::vector<std::pair<DegenerationAction, int32_t>> loops;
};

class EngineDegenerationGuard : public ::testing::Test {
protected:
    GenerationOptions alphabet_request(DegenerationAction action, int64_t max_tokens) {
        GenerationOptions options;
        options.prompt = {'a'};
        options.max_tokens = max_tokens;
        options.sampling.temperature = 0.0f;
        options.seed = 7;
        options.guard = guard_with(action, /*max_pattern_size=*/32, /*min_count=*/2);
        return options;
    }

    Tokenizer tokenizer_ = testing::byte_tokenizer();
    testing::FakeModel model_{tokenizer_.vocab_size()};
    CountingDegenerationObserver observer_;
    std::unique_ptr<KvBlockPool> pool_ = testing::tiny_pool(64);
    Engine engine_{model_, tokenizer_, *pool_, EngineOptions{}, &observer_};
};

// After "a" the fake model writes "bcd...z" then "abc...": the 26-letter block is complete twice on
// output token 51.
constexpr size_t kSecondCopyEnds = 51;

TEST_F(EngineDegenerationGuard, FlagLeavesTheOutputAsItWasAndReportsTheLoop) {
    const ChoiceOutcome out = run_one(engine_, alphabet_request(DegenerationAction::Flag, 80));
    EXPECT_EQ(out.tokens.size(), 80u);
    EXPECT_EQ(out.finish, FinishReason::Length);
    ASSERT_EQ(out.reports.size(), 2u);  // on detection, then on the finishing delta
    EXPECT_EQ(out.report_at_token[0], kSecondCopyEnds + 1);
    EXPECT_EQ(out.reports[0].loop.detected_at_token, static_cast<int64_t>(kSecondCopyEnds));
    EXPECT_EQ(out.reports[0].loop.period, 26);
    EXPECT_EQ(out.reports[0].loop.repeats, 2);
    EXPECT_EQ(out.report_at_token[1], 80u);
    EXPECT_EQ(out.reports[1].loop.repeats, 3);  // 80 tokens: 3 whole copies of the 26 ending at the end
    std::lock_guard lock(observer_.mutex_);
    EXPECT_EQ(observer_.loops, (std::vector<std::pair<DegenerationAction, int32_t>>{{DegenerationAction::Flag, 26}}));
    EXPECT_EQ(observer_.outcomes, std::vector<RequestOutcome>{RequestOutcome::Length});
}

TEST_F(EngineDegenerationGuard, StopEndsTheChoiceWithRepetitionAndKeepsItsText) {
    const ChoiceOutcome out = run_one(engine_, alphabet_request(DegenerationAction::Stop, 80));
    EXPECT_EQ(out.tokens.size(), kSecondCopyEnds + 1);
    EXPECT_EQ(out.finish, FinishReason::Repetition);
    EXPECT_EQ(out.text, "bcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyza");
    ASSERT_EQ(out.reports.size(), 1u);
    EXPECT_EQ(out.reports[0].action, DegenerationAction::Stop);
    std::lock_guard lock(observer_.mutex_);
    EXPECT_EQ(observer_.outcomes, std::vector<RequestOutcome>{RequestOutcome::Repetition});
    EXPECT_EQ(observer_.loops.size(), 1u);
}

TEST_F(EngineDegenerationGuard, StopFlushesTextTheStopMatcherHeldBack) {
    GenerationOptions options = alphabet_request(DegenerationAction::Stop, 80);
    options.stop = {"zab!"};  // "...za" at the detecting token could still begin it: held back, then released
    const ChoiceOutcome out = run_one(engine_, std::move(options));
    EXPECT_EQ(out.finish, FinishReason::Repetition);
    EXPECT_EQ(out.text, "bcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyza");
}

TEST_F(EngineDegenerationGuard, ResampleDrawsTheRestWithTheFallback) {
    // Greedy, the fake model never ends (the next letter beats end-of-text by 1 logit); at the fallback's
    // temperature 0.7 end-of-text has a fifth of the next letter's weight, so the choice soon stops itself.
    const ChoiceOutcome out = run_one(engine_, alphabet_request(DegenerationAction::Resample, 400));
    ASSERT_FALSE(out.reports.empty());
    EXPECT_EQ(out.reports[0].action, DegenerationAction::Resample);
    ASSERT_TRUE(out.reports[0].resampled);
    EXPECT_EQ(out.reports[0].resampled->sampling.temperature, 0.7f);
    EXPECT_EQ(out.finish, FinishReason::Stop);
    EXPECT_LT(out.tokens.size(), 400u);
    EXPECT_GT(out.tokens.size(), kSecondCopyEnds);
}

TEST_F(EngineDegenerationGuard, OffSeesNothing) {
    const ChoiceOutcome out = run_one(engine_, alphabet_request(DegenerationAction::Off, 80));
    EXPECT_EQ(out.tokens.size(), 80u);
    EXPECT_TRUE(out.reports.empty());
    std::lock_guard lock(observer_.mutex_);
    EXPECT_TRUE(observer_.loops.empty());
}

TEST_F(EngineDegenerationGuard, EachChoiceHasItsOwnDetector) {
    GenerationOptions options = alphabet_request(DegenerationAction::Stop, 80);
    options.n = 3;
    auto submitted = engine_.submit(std::move(options));
    std::vector<std::optional<FinishReason>> finish(3);
    std::vector<int64_t> generated(3, 0);
    for (bool done = false; !done;) {
        auto event = submitted.stream->next(std::chrono::milliseconds(50));
        if (!event) continue;
        for (const ChoiceDelta& delta : event->deltas) {
            generated[static_cast<size_t>(delta.index)] += static_cast<int64_t>(delta.tokens.size());
            if (delta.finish) finish[static_cast<size_t>(delta.index)] = delta.finish;
        }
        done = event->done;
    }
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(finish[static_cast<size_t>(i)], FinishReason::Repetition) << i;
        EXPECT_EQ(generated[static_cast<size_t>(i)], static_cast<int64_t>(kSecondCopyEnds + 1)) << i;
    }
    std::lock_guard lock(observer_.mutex_);
    EXPECT_EQ(observer_.loops.size(), 3u);
}

}  // namespace engine_degeneration_guard_test
}  // namespace
}  // namespace tempered
