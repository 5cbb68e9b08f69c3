// The scheduler without a GGUF file or a thread: a tiny KV pool (blocks of 4 positions), the fake
// model (it refuses any token without a KV block) and the real postprocess, stepped one at a time the
// way Engine::step() does. Requests are compared by address only while they are alive.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/postprocess.h"
#include "engine/scheduler.h"
#include "engine_test_support.h"
#include "grammar/json_schema.h"
#include "server/structured_output.h"

namespace tempered {
namespace {
namespace scheduler_test {

using testing::CountingObserver;
using testing::FakeModel;

std::vector<int32_t> letters(const std::string& text) { return {text.begin(), text.end()}; }

// `count` copies of `first`: prompts of different letters share no prefix.
std::vector<int32_t> prompt_of(int count, char first) {
    return std::vector<int32_t>(static_cast<size_t>(count), first);
}

std::vector<int32_t> expected_greedy(int32_t last, int64_t count) {
    std::vector<int32_t> out;
    for (int64_t i = 0; i < count; ++i) out.push_back(last = testing::fake_next_token(last));
    return out;
}

struct Chunk {
    Request* request;
    int choice;
    int64_t start;
    int64_t count;
    bool operator==(const Chunk&) const = default;
};

struct StepResult {
    std::vector<Chunk> chunks;
    std::vector<Request*> preempted;
    std::vector<Request*> admitted_first_time;
    std::vector<Request*> refused;
};

struct Submitted {
    Request* request;
    std::shared_ptr<GenerationStream> stream;
};

// What a request's reader has been sent so far.
struct Received {
    std::vector<std::vector<int32_t>> tokens;  // per choice
    int events = 0;
    bool done = false;
    std::optional<std::string> error;
    GenerationUsage usage;  // from the last event
};

Received drain(GenerationStream& stream, int n = 1) {
    Received out;
    out.tokens.resize(static_cast<size_t>(n));
    while (auto event = stream.next(std::chrono::milliseconds(0))) {
        ++out.events;
        for (const auto& delta : event->deltas) {
            auto& tokens = out.tokens.at(static_cast<size_t>(delta.index));
            tokens.insert(tokens.end(), delta.tokens.begin(), delta.tokens.end());
        }
        out.done = out.done || event->done;
        if (event->done) out.usage = event->usage;
        if (event->error) out.error = event->error;
    }
    return out;
}

class SchedulerTest : public ::testing::Test {
protected:
    void make(int64_t blocks, int64_t budget = 512, int max_running = 64,
              const KvCacheShape& shape = testing::tiny_kv_shape(), double max_decode_stall_seconds = 0,
              int speculative_tokens = 0) {
        pool_ = testing::tiny_pool(blocks, shape);
        scheduler_.emplace(*pool_,
                           SchedulerOptions{max_running, budget, speculative_tokens, 0, max_decode_stall_seconds});
        postprocess_.emplace(tokenizer_, model_.config(), *pool_, &observer_, ids_);
    }

    Submitted submit(std::vector<int32_t> prompt, int64_t max_tokens, int n = 1) {
        auto request = std::make_unique<Request>();
        request->options.prompt = std::move(prompt);
        request->options.max_tokens = max_tokens;
        request->options.n = n;
        request->options.sampling.temperature = 0.0f;
        request->stream = std::make_shared<GenerationStream>();
        request->submitted = EngineClock::now();
        request->usage.prompt_tokens = static_cast<int64_t>(request->options.prompt.size());
        request->sequences.push_back(std::make_unique<Sequence>(
            ids_.next(), 0, request->options.prompt, request->usage.prompt_tokens, request->options, tokenizer_));
        Submitted submitted{request.get(), request->stream};
        scheduler_->add(std::move(request));
        return submitted;
    }

    // One engine step: plan, refuse, forward through the fake model, postprocess, retire.
    StepResult step() {
        StepPlan& plan = scheduler_->schedule();
        StepResult result;
        for (const auto& chunk : plan.chunks)
            result.chunks.push_back({chunk.request, chunk.sequence->choice, chunk.sequence->computed, chunk.count});
        result.preempted = plan.preempted;
        result.admitted_first_time = plan.admitted_first_time;
        for (const auto& request : plan.refused) {
            result.refused.push_back(request.get());
            postprocess_->finish(*request, "the request does not fit in the KV cache");
        }
        if (plan.chunks.empty()) return result;
        fill_batch(plan, batch_);
        logits_.resize(static_cast<size_t>(batch_.output_count() * model_.config().vocab_size));
        const Status forward = model_.forward(batch_, *pool_, logits_.data());
        EXPECT_TRUE(forward) << forward.error().message;
        scheduler_->retire(postprocess_->apply(plan, forward, logits_.data()).finished);
        return result;
    }

    // Steps until nothing is left, returning every step's result.
    std::vector<StepResult> run_to_completion(int max_steps = 500) {
        std::vector<StepResult> steps;
        while (scheduler_->has_work() && static_cast<int>(steps.size()) < max_steps) steps.push_back(step());
        EXPECT_FALSE(scheduler_->has_work()) << "still working after " << max_steps << " steps";
        return steps;
    }

    bool is_waiting(const Request* request) const {
        const auto& waiting = scheduler_->waiting();
        return std::any_of(waiting.begin(), waiting.end(), [&](const auto& r) { return r.get() == request; });
    }

    Tokenizer tokenizer_ = testing::byte_tokenizer();
    FakeModel model_{tokenizer_.vocab_size()};
    CountingObserver observer_;
    SequenceIds ids_;
    std::unique_ptr<KvBlockPool> pool_;
    std::optional<Scheduler> scheduler_;
    std::optional<Postprocessor> postprocess_;
    Batch batch_;
    std::vector<float> logits_;
};

TEST_F(SchedulerTest, DecodeAndPrefillShareOneTokenBudget) {
    make(64, /*budget=*/16);
    auto a = submit(letters("abcd"), 10);
    EXPECT_EQ(step().chunks, (std::vector<Chunk>{{a.request, 0, 0, 4}}));
    auto b = submit(prompt_of(40, 'B'), 4);
    // The decoding request takes one token of the budget, the prompt gets the other fifteen.
    EXPECT_EQ(step().chunks, (std::vector<Chunk>{{a.request, 0, 4, 1}, {b.request, 0, 0, 15}}));
    EXPECT_EQ(step().chunks, (std::vector<Chunk>{{a.request, 0, 5, 1}, {b.request, 0, 15, 15}}));
}

// Steps of 1 to `largest` tokens that took fixed + per_token * tokens seconds, as the engine reports them.
void teach_step_costs(Scheduler& scheduler, double fixed, double per_token, int64_t largest) {
    for (int64_t tokens = 1; tokens <= largest; ++tokens) {
        StepPlan plan;
        plan.chunks.push_back({nullptr, nullptr, tokens, 0});
        scheduler.observe_step(plan, fixed + per_token * static_cast<double>(tokens));
    }
}

TEST_F(SchedulerTest, TheStallBoundCapsPromptTokensBesideDecodes) {
    // 2 ms + 0.5 ms per token, and decodes may wait 20 ms: a step holds 36 tokens, so 35 of prompt beside one decode.
    make(64, /*budget=*/64, 64, testing::tiny_kv_shape(), /*max_decode_stall_seconds=*/0.020);
    teach_step_costs(*scheduler_, 0.002, 0.0005, 64);
    auto a = submit(letters("abcd"), 10);
    EXPECT_EQ(step().chunks, (std::vector<Chunk>{{a.request, 0, 0, 4}}));  // nothing decodes: the whole budget
    auto b = submit(prompt_of(40, 'B'), 4);
    EXPECT_EQ(step().chunks, (std::vector<Chunk>{{a.request, 0, 4, 1}, {b.request, 0, 0, 35}}));
    EXPECT_EQ(step().chunks, (std::vector<Chunk>{{a.request, 0, 5, 1}, {b.request, 0, 35, 5}}));
}

TEST_F(SchedulerTest, TheAutomaticStallBoundIsTwiceTheDecodeStep) {
    // 20 ms + 0.5 ms per token: one decode alone takes 20.5 ms, so a step may take 41 ms: 42 tokens, 41 of prompt.
    make(64, /*budget=*/256, 64, testing::tiny_kv_shape(), kAutoDecodeStall);
    teach_step_costs(*scheduler_, 0.020, 0.0005, 64);
    auto a = submit(letters("abcd"), 10);
    step();
    auto b = submit(prompt_of(100, 'B'), 4);
    EXPECT_EQ(step().chunks, (std::vector<Chunk>{{a.request, 0, 4, 1}, {b.request, 0, 0, 41}}));
}

TEST_F(SchedulerTest, TheAutomaticBoundKeepsTheFixedPartOfDecodeOnlySteps) {
    // Decode-only steps of 1-4 positions at 20 ms + 0.5 ms each, then many larger steps that look proportional
    // to their size (as compute-bound steps full of drafts do): the all-steps line puts its fixed part near 0, but
    // a step still reads the weights once, so the bound starts from the decode-only steps' 20 ms.
    make(64, /*budget=*/256, 64, testing::tiny_kv_shape(), kAutoDecodeStall);
    for (int64_t decodes = 1; decodes <= 4; ++decodes) {
        StepPlan plan;
        for (int64_t i = 0; i < decodes; ++i) plan.chunks.push_back({nullptr, nullptr, 1, 0});
        scheduler_->observe_step(plan, 0.020 + 0.0005 * static_cast<double>(decodes));
    }
    for (int64_t tokens = 2; tokens <= 200; ++tokens) {
        StepPlan plan;
        plan.chunks.push_back({nullptr, nullptr, tokens, 0});
        scheduler_->observe_step(plan, 0.0005 * static_cast<double>(tokens));
    }
    const auto all_steps = scheduler_->step_cost();
    const auto decode_only = scheduler_->decode_step_cost();
    ASSERT_TRUE(all_steps && decode_only);
    EXPECT_LT(all_steps->fixed_seconds, 0.002);
    EXPECT_NEAR(decode_only->fixed_seconds, 0.020, 1e-9);
    // One decode: 2 * (20 ms + p) bounds the step, so 20 ms / p + 1 prompt tokens fit beside it.
    const auto expected = static_cast<int64_t>(0.020 / all_steps->per_token_seconds + 1.0);
    EXPECT_GT(expected, static_cast<int64_t>(all_steps->fixed_seconds / all_steps->per_token_seconds + 1.0) + 5);
    auto a = submit(letters("abcd"), 10);
    step();
    auto b = submit(prompt_of(100, 'B'), 4);
    EXPECT_EQ(step().chunks, (std::vector<Chunk>{{a.request, 0, 4, 1}, {b.request, 0, 0, expected}}));
}

TEST_F(SchedulerTest, TheStallBoundStillGivesPromptsAMinimumChunk) {
    make(64, /*budget=*/64, 64, testing::tiny_kv_shape(), /*max_decode_stall_seconds=*/0.001);  // below one step
    teach_step_costs(*scheduler_, 0.002, 0.0005, 64);
    auto a = submit(letters("abcd"), 10);
    step();
    auto b = submit(prompt_of(40, 'B'), 4);
    EXPECT_EQ(step().chunks, (std::vector<Chunk>{{a.request, 0, 4, 1}, {b.request, 0, 0, kMinimumPrefillChunk}}));
    EXPECT_EQ(drain(*b.stream).events, 0);
    run_to_completion();
    EXPECT_EQ(drain(*b.stream).tokens[0], expected_greedy('B', 4));
}

// A speculating sequence under a JSON schema whose "name" holds at most 5 characters, its grammar already past
// `{"name": "ab`: the prompt makes prompt lookup propose "defg" after the drawn "c", and the grammar takes only
// "d" and "e" before the closing quote, so the step verifies those two (the first draw and both drafts the fake
// model's own), then the quote is drawn where the model wanted "f".
std::shared_ptr<const grammar::Constraint> short_name_schema(const Tokenizer& tokenizer) {
    auto grammar = grammar::compile_json_schema(nlohmann::ordered_json::parse(
        R"({"type":"object","properties":{"name":{"type":"string","maxLength":5}},"required":["name"]})"));
    auto vocabulary =
        std::make_shared<const grammar::GrammarVocabulary>(grammar_vocabulary(tokenizer, tokenizer.vocab_size()));
    return std::make_shared<const grammar::Constraint>(std::move(grammar).value(), vocabulary);
}

TEST_F(SchedulerTest, DraftsTheGrammarRefusesAreNotVerified) {
    for (const bool constrained : {false, true}) {
        make(64, 512, 64, testing::tiny_kv_shape(), 0, /*speculative_tokens=*/4);
        auto a = submit(letters(R"(x"abcdefgh" "ab)"), 8);
        Sequence& sequence = *a.request->sequences.front();
        if (constrained) {
            sequence.constraint.emplace(short_name_schema(tokenizer_));
            for (int32_t token : letters(R"({"name": "ab)")) ASSERT_TRUE(sequence.constraint->accept(token));
        }
        sequence.drafter.emplace(NgramOptions{.max_drafts = 4});
        sequence.drafter->append(sequence.tokens);
        EXPECT_EQ(step().chunks, (std::vector<Chunk>{{a.request, 0, 0, 15}}));
        EXPECT_EQ(step().chunks, (std::vector<Chunk>{{a.request, 0, 15, constrained ? 3 : 5}})) << constrained;
        run_to_completion();
        const auto tokens = drain(*a.stream).tokens[0];
        if (constrained) {
            EXPECT_EQ(std::string(tokens.begin(), tokens.begin() + 4), R"(cde")");
        }
    }
}

TEST_F(SchedulerTest, ChunkedPrefillContinuesWhereTheLastChunkStopped) {
    make(64, /*budget=*/8);
    auto a = submit(prompt_of(20, 'a'), 3);
    const Sequence& sequence = *a.request->sequences.front();
    EXPECT_EQ(step().chunks, (std::vector<Chunk>{{a.request, 0, 0, 8}}));
    EXPECT_EQ(sequence.generated(), 0);  // mid-prefill logits are not sampled
    EXPECT_EQ(step().chunks, (std::vector<Chunk>{{a.request, 0, 8, 8}}));
    EXPECT_EQ(sequence.generated(), 0);
    EXPECT_EQ(step().chunks, (std::vector<Chunk>{{a.request, 0, 16, 4}}));
    EXPECT_EQ(sequence.generated(), 1);
    EXPECT_EQ(step().chunks, (std::vector<Chunk>{{a.request, 0, 20, 1}}));
    EXPECT_EQ(drain(*a.stream).tokens[0], expected_greedy('a', 2));
}

TEST_F(SchedulerTest, ASecondPromptGetsWhatIsLeftOfTheBudgetAndTheThirdWaits) {
    make(64, /*budget=*/6);
    auto a = submit(letters("abcd"), 4);
    auto b = submit(letters("efgh"), 4);
    auto c = submit(letters("ijkl"), 4);
    EXPECT_EQ(step().chunks, (std::vector<Chunk>{{a.request, 0, 0, 4}, {b.request, 0, 0, 2}}));
    EXPECT_TRUE(is_waiting(c.request));
    EXPECT_EQ(scheduler_->running().size(), 2u);
}

TEST_F(SchedulerTest, PrefixCacheHitsAreNotComputedAgain) {
    make(64);
    submit(letters("abcdefghijkl"), 2);
    run_to_completion();
    auto b = submit(letters("abcdefghWXYZ"), 2);
    const StepResult result = step();
    EXPECT_EQ(result.chunks, (std::vector<Chunk>{{b.request, 0, 8, 4}}));
    EXPECT_EQ(b.request->usage.cached_tokens, 8);
    EXPECT_EQ(result.admitted_first_time, std::vector<Request*>{b.request});
}

TEST_F(SchedulerTest, AFullyCachedPromptStillComputesItsLastBlockForTheLogits) {
    make(64);
    submit(letters("abcdefgh"), 1);
    run_to_completion();
    auto b = submit(letters("abcdefgh"), 3);
    EXPECT_EQ(step().chunks, (std::vector<Chunk>{{b.request, 0, 4, 4}}));
    EXPECT_EQ(b.request->usage.cached_tokens, 4);
    run_to_completion();
    EXPECT_EQ(drain(*b.stream).tokens[0], expected_greedy('h', 3));
}

TEST_F(SchedulerTest, RunningRequestsGoOldestFirstAndWaitingOnesInArrivalOrder) {
    make(64);
    auto a = submit(letters("abcd"), 10);
    auto b = submit(letters("efgh"), 10);
    auto c = submit(letters("ijkl"), 10);
    EXPECT_EQ(step().chunks, (std::vector<Chunk>{{a.request, 0, 0, 4}, {b.request, 0, 0, 4}, {c.request, 0, 0, 4}}));
    auto d = submit(letters("mnop"), 10);
    EXPECT_EQ(
        step().chunks,
        (std::vector<Chunk>{{a.request, 0, 4, 1}, {b.request, 0, 4, 1}, {c.request, 0, 4, 1}, {d.request, 0, 0, 4}}));
}

TEST_F(SchedulerTest, TheHeadOfTheQueueBlocksThoseBehindItEvenIfTheyWouldFit) {
    make(8);
    auto a = submit(letters("abcd"), 20);
    step();
    auto b = submit(prompt_of(24, 'B'), 2);  // 6 blocks: with A's 2, none would be left for A to grow
    auto c = submit(letters("efgh"), 2);     // 1 block: would fit
    EXPECT_EQ(step().chunks, (std::vector<Chunk>{{a.request, 0, 4, 1}}));
    ASSERT_EQ(scheduler_->waiting().size(), 2u);
    EXPECT_EQ(scheduler_->waiting()[0].get(), b.request);
    EXPECT_EQ(scheduler_->waiting()[1].get(), c.request);
    run_to_completion();
    EXPECT_EQ(drain(*b.stream).tokens[0], expected_greedy('B', 2));
    EXPECT_EQ(drain(*c.stream).tokens[0], expected_greedy('h', 2));
}

TEST_F(SchedulerTest, MaxRunningCapsAdmissions) {
    make(64, 512, /*max_running=*/2);
    auto a = submit(letters("abcd"), 3);
    auto b = submit(letters("efgh"), 3);
    auto c = submit(letters("ijkl"), 3);
    for (int i = 0; i < 3; ++i) {
        const StepResult result = step();
        EXPECT_EQ(result.chunks.size(), 2u) << i;
        EXPECT_TRUE(is_waiting(c.request)) << i;
    }
    EXPECT_TRUE(drain(*a.stream).done);
    EXPECT_TRUE(drain(*b.stream).done);
    EXPECT_EQ(step().chunks, (std::vector<Chunk>{{c.request, 0, 0, 4}}));
}

TEST_F(SchedulerTest, AntiThrashRuleKeepsABlockFreeForEveryRunningSequence) {
    // A holds 2 blocks after its first decode step; B's prompt needs 2. With 4 blocks B would take the
    // last two and leave A nothing to grow into, so it waits; with 5 one is left, so it is admitted.
    for (const int64_t blocks : {4, 5}) {
        make(blocks);
        auto a = submit(letters("abcd"), 6);
        step();
        auto b = submit(letters("efghijkl"), 2);
        const StepResult result = step();
        EXPECT_EQ(result.chunks.size(), blocks == 4 ? 1u : 2u) << blocks;
        EXPECT_EQ(is_waiting(b.request), blocks == 4) << blocks;
        EXPECT_TRUE(result.refused.empty());
        run_to_completion();
        EXPECT_EQ(drain(*a.stream).tokens[0], expected_greedy('d', 6));
    }
}

TEST_F(SchedulerTest, AntiThrashRuleCountsEveryChoiceOfARunningRequest) {
    // As above with two choices running: with 7 blocks, 4 are free after they fork and decode, B's
    // prompt needs 2, and two must stay free, so B is admitted; with one block less, B waits (a rule
    // counting requests instead of sequences would admit it).
    for (const int64_t blocks : {6, 7}) {
        make(blocks);
        submit(letters("abcd"), 6, /*n=*/2);
        step();  // prefill; the choices fork onto the shared block (a full one: shared, not copied)
        step();  // each choice takes a block of its own for position 4
        ASSERT_EQ(pool_->used_block_count(), 3);
        auto b = submit(letters("efghijkl"), 2);
        step();
        EXPECT_EQ(is_waiting(b.request), blocks == 6) << blocks;
        run_to_completion();
    }
}

TEST_F(SchedulerTest, PreemptsTheMostRecentlyAdmittedAndRecomputesItLater) {
    // Three requests of 4 + 20 tokens; 6 blocks hold all three until position 8, then two, then one.
    make(6);
    auto a = submit(letters("abcd"), 20);
    auto b = submit(letters("efgh"), 20);
    auto c = submit(letters("ijkl"), 20);
    std::vector<Request*> preempted;
    int steps = 0;
    while (scheduler_->has_work() && steps++ < 500) {
        const StepResult result = step();
        for (Request* request : result.preempted) {
            preempted.push_back(request);
            EXPECT_TRUE(is_waiting(request));
            EXPECT_EQ(scheduler_->waiting().front().get(), result.preempted.back());
        }
        if (preempted.size() < 2) {
            EXPECT_TRUE(std::find(preempted.begin(), preempted.end(), a.request) == preempted.end());
        }
    }
    ASSERT_GE(preempted.size(), 2u);
    EXPECT_EQ(preempted[0], c.request);
    EXPECT_EQ(preempted[1], b.request);
    EXPECT_EQ(observer_.outcomes(), std::vector<RequestOutcome>(3, RequestOutcome::Length));
    // Recomputing after a preemption does not change what a request generates.
    EXPECT_EQ(drain(*a.stream).tokens[0], expected_greedy('d', 20));
    EXPECT_EQ(drain(*b.stream).tokens[0], expected_greedy('h', 20));
    EXPECT_EQ(drain(*c.stream).tokens[0], expected_greedy('l', 20));
    EXPECT_EQ(pool_->used_block_count(), 0);
}

TEST_F(SchedulerTest, APreemptedRequestRecomputesEveryTokenItHadBeyondItsCachedPrefix) {
    make(6);
    auto a = submit(letters("abcd"), 20);
    auto b = submit(letters("efgh"), 20);
    auto c = submit(letters("ijkl"), 20);
    int64_t c_tokens_when_preempted = 0;
    for (int i = 0; i < 100 && c_tokens_when_preempted == 0; ++i) {
        const StepResult result = step();
        if (!result.preempted.empty()) {
            ASSERT_EQ(result.preempted, std::vector<Request*>{c.request});
            EXPECT_EQ(c.request->sequences[0]->computed, 0);
            c_tokens_when_preempted = static_cast<int64_t>(c.request->sequences[0]->tokens.size());
        }
    }
    ASSERT_GT(c_tokens_when_preempted, 4);
    // When it runs again, one chunk takes it from its cached prefix to its last sampled token.
    for (int i = 0; i < 200; ++i) {
        const StepResult result = step();
        const auto it = std::find_if(result.chunks.begin(), result.chunks.end(),
                                     [&](const Chunk& chunk) { return chunk.request == c.request; });
        if (it == result.chunks.end()) continue;
        EXPECT_EQ(it->start % 4, 0);
        EXPECT_EQ(it->start + it->count, c_tokens_when_preempted);
        EXPECT_GT(it->count, 1);
        break;
    }
    run_to_completion();
    EXPECT_EQ(drain(*c.stream).tokens[0], expected_greedy('l', 20));
    EXPECT_EQ(drain(*a.stream).tokens[0], expected_greedy('d', 20));
    EXPECT_EQ(drain(*b.stream).tokens[0], expected_greedy('h', 20));
}

TEST_F(SchedulerTest, RefusesAPromptThatAnEmptyPoolCannotHoldAndAdmitsTheNext) {
    make(4);  // 16 positions
    auto a = submit(prompt_of(17, 'a'), 1);
    auto b = submit(letters("abcd"), 1);
    const StepResult result = step();
    EXPECT_EQ(result.refused, std::vector<Request*>{a.request});
    EXPECT_EQ(result.chunks, (std::vector<Chunk>{{b.request, 0, 0, 4}}));
    const Received refused = drain(*a.stream);
    EXPECT_TRUE(refused.done);
    ASSERT_TRUE(refused.error);
    EXPECT_NE(refused.error->find("does not fit"), std::string::npos);
}

TEST_F(SchedulerTest, APromptThatFitsAnEmptyPoolWaitsWhileOthersRunInsteadOfBeingRefused) {
    make(4);
    auto a = submit(letters("abcd"), 8);  // grows to 3 blocks
    step();
    auto b = submit(prompt_of(12, 'B'), 2);  // 3 blocks
    const auto steps = run_to_completion();
    for (const auto& result : steps) EXPECT_TRUE(result.refused.empty());
    EXPECT_EQ(drain(*a.stream).tokens[0], expected_greedy('d', 8));
    EXPECT_EQ(drain(*b.stream).tokens[0], expected_greedy('B', 2));
}

TEST_F(SchedulerTest, ARequestThatOutgrowsTheWholePoolPreemptsItselfAndIsRefused) {
    make(2);  // 8 positions; the request needs 4 + 10
    auto a = submit(letters("abcd"), 10);
    const auto steps = run_to_completion();
    const StepResult& last = steps.back();
    EXPECT_EQ(last.preempted, std::vector<Request*>{a.request});
    EXPECT_EQ(last.refused, std::vector<Request*>{a.request});
    EXPECT_TRUE(last.chunks.empty());
    const Received received = drain(*a.stream);
    // The prefill's token, then one for each of positions 4..7; position 8 has no block.
    EXPECT_EQ(received.tokens[0], expected_greedy('d', 5));
    ASSERT_TRUE(received.error);
    EXPECT_EQ(observer_.outcomes(), std::vector<RequestOutcome>{RequestOutcome::Error});
    EXPECT_EQ(pool_->used_block_count(), 0);
}

TEST_F(SchedulerTest, ChoicesForkOnTheSharedPrefillAndDecodeSeparately) {
    make(64);
    auto a = submit(letters("abcdefgh"), 4, /*n=*/3);
    EXPECT_EQ(step().chunks, (std::vector<Chunk>{{a.request, 0, 0, 8}}));
    ASSERT_EQ(a.request->sequences.size(), 3u);
    EXPECT_EQ(pool_->used_block_count(), 2);  // the prompt's two full blocks, shared by all three
    const Received first = drain(*a.stream, 3);
    EXPECT_EQ(first.events, 1);  // one event with every choice's first token
    for (int choice = 0; choice < 3; ++choice) EXPECT_EQ(first.tokens[static_cast<size_t>(choice)].size(), 1u);
    EXPECT_EQ(step().chunks, (std::vector<Chunk>{{a.request, 0, 8, 1}, {a.request, 1, 8, 1}, {a.request, 2, 8, 1}}));
    EXPECT_EQ(pool_->used_block_count(), 2 + 3);
    run_to_completion();  // retires the request: from here on only its stream tells
    const Received rest = drain(*a.stream, 3);
    ASSERT_TRUE(rest.done);
    EXPECT_EQ(rest.usage.completion_tokens, 12);
    EXPECT_EQ(pool_->used_block_count(), 0);
}

TEST_F(SchedulerTest, CancelledRequestsLeaveTheQueuesAndFreeTheirBlocks) {
    make(64, 512, /*max_running=*/1);
    auto a = submit(letters("abcdefgh"), 20);
    auto b = submit(letters("ijklmnop"), 20);
    step();
    EXPECT_GT(pool_->used_block_count(), 0);
    a.stream->cancel();
    b.stream->cancel();
    const auto dropped = scheduler_->drop_cancelled();
    ASSERT_EQ(dropped.size(), 2u);
    EXPECT_EQ(dropped[0].get(), a.request);  // running ones first
    EXPECT_EQ(dropped[1].get(), b.request);
    EXPECT_FALSE(scheduler_->has_work());
    EXPECT_EQ(pool_->used_block_count(), 0);
}

TEST_F(SchedulerTest, FinishingReleasesEveryBlockAndKeepsFullOnesCached) {
    make(64);
    auto a = submit(letters("abcdef"), 5, /*n=*/2);
    run_to_completion();
    EXPECT_TRUE(scheduler_->running().empty());
    EXPECT_EQ(pool_->used_block_count(), 0);
    EXPECT_GT(pool_->cached_block_count(), 0);
    const Received received = drain(*a.stream, 2);
    EXPECT_TRUE(received.done);
    EXPECT_FALSE(received.error);
    EXPECT_EQ(received.tokens[0], expected_greedy('f', 5));
    EXPECT_EQ(received.tokens[1], expected_greedy('f', 5));
}

TEST_F(SchedulerTest, FirstAdmissionIsReportedOnceHoweverOftenARequestWaitsOrIsPreempted) {
    make(6);
    auto a = submit(letters("abcd"), 20);
    auto b = submit(letters("efgh"), 20);
    auto c = submit(letters("ijkl"), 20);
    auto d = submit(prompt_of(16, 'D'), 2);  // turned away while the others run
    std::vector<Request*> admitted;
    int preemptions = 0;
    for (const auto& result : run_to_completion()) {
        admitted.insert(admitted.end(), result.admitted_first_time.begin(), result.admitted_first_time.end());
        preemptions += static_cast<int>(result.preempted.size());
    }
    EXPECT_GT(preemptions, 0);
    ASSERT_EQ(admitted.size(), 4u);
    EXPECT_EQ(admitted[0], a.request);
    EXPECT_EQ(admitted[1], b.request);
    EXPECT_EQ(admitted[2], c.request);
    EXPECT_EQ(admitted[3], d.request);
    EXPECT_EQ(drain(*d.stream).tokens[0], expected_greedy('D', 2));
}

// A sliding-window model (testing::tiny_window_kv_shape: layer 0 sees the last 6 positions, layer 1
// all; blocks of 4, one per layer): the fake model refuses any token whose window lacks a block.

TEST_F(SchedulerTest, AWindowModelDecodesPastWhatItsPoolCouldHoldWithoutTheWindow) {
    // 4 + 40 tokens: positions 0..42 are computed. At position 40 the sequence holds 11 global
    // blocks and window blocks 8..10 (positions 35..40): 14, its most. Without the window, 22.
    make(14, 512, 64, testing::tiny_window_kv_shape());
    auto a = submit(letters("abcd"), 40);
    const auto steps = run_to_completion();
    for (const auto& result : steps) {
        EXPECT_TRUE(result.preempted.empty());
        EXPECT_TRUE(result.refused.empty());
    }
    EXPECT_EQ(drain(*a.stream).tokens[0], expected_greedy('d', 40));
    EXPECT_EQ(pool_->used_block_count(), 0);
}

TEST_F(SchedulerTest, AWindowModelRequestThatOutgrowsItsPoolIsRefused) {
    // One block less: position 40 needs a new block in each group with one free.
    make(13, 512, 64, testing::tiny_window_kv_shape());
    auto a = submit(letters("abcd"), 40);
    const auto steps = run_to_completion();
    const StepResult& last = steps.back();
    EXPECT_EQ(last.preempted, std::vector<Request*>{a.request});
    EXPECT_EQ(last.refused, std::vector<Request*>{a.request});
    const Received received = drain(*a.stream);
    EXPECT_EQ(received.tokens[0], expected_greedy('d', 37));  // the prefill's token, then positions 4..39
    ASSERT_TRUE(received.error);
    EXPECT_EQ(pool_->used_block_count(), 0);
}

TEST_F(SchedulerTest, AntiThrashRuleCountsOnlyTheWindowOfAWindowModelsPrompt) {
    // A holds 2 blocks per group after its first decode step. B's 24-token prompt, in chunks of at
    // most 8, ends holding 6 global blocks and the window's 4 (blocks 2..5 from position 16): 10, not
    // the 12 of a count without windows. Two must stay free for A: 16 blocks admit B, 15 do not.
    for (const int64_t blocks : {15, 16}) {
        make(blocks, /*budget=*/8, 64, testing::tiny_window_kv_shape());
        auto a = submit(letters("abcd"), 20);
        step();
        auto b = submit(prompt_of(24, 'B'), 2);
        const StepResult result = step();
        EXPECT_EQ(is_waiting(b.request), blocks == 15) << blocks;
        EXPECT_TRUE(result.refused.empty());
        const auto steps = run_to_completion();
        for (const auto& later : steps) EXPECT_TRUE(later.refused.empty());
        EXPECT_EQ(drain(*a.stream).tokens[0], expected_greedy('d', 20));
        EXPECT_EQ(drain(*b.stream).tokens[0], expected_greedy('B', 2));
        EXPECT_EQ(pool_->used_block_count(), 0);
    }
}

TEST_F(SchedulerTest, WindowModelChoicesForkAndSlideTheirWindowsApart) {
    make(64, 512, 64, testing::tiny_window_kv_shape());
    auto a = submit(letters("abcdefgh"), 12, /*n=*/3);
    step();
    ASSERT_EQ(a.request->sequences.size(), 3u);
    EXPECT_EQ(pool_->used_block_count(), 4);  // two full blocks per group, shared by all three
    step();  // position 8 in each: from there the window reaches back to block 0 (position 3)
    EXPECT_EQ(pool_->used_block_count(), 4 + 3 * 2);
    step();  // position 9: window block 0 is out of reach of every choice, so back in the pool
    EXPECT_EQ(pool_->used_block_count(), 4 + 3 * 2 - 1);
    run_to_completion();
    const Received received = drain(*a.stream, 3);
    for (int choice = 0; choice < 3; ++choice)
        EXPECT_EQ(received.tokens[static_cast<size_t>(choice)], expected_greedy('h', 12)) << choice;
    EXPECT_EQ(pool_->used_block_count(), 0);
}

TEST_F(SchedulerTest, AWindowModelReusesACachedPrefixWithItsWindow) {
    make(64, 512, 64, testing::tiny_window_kv_shape());
    submit(letters("abcdefghijklmnop"), 6);  // its window leaves blocks 0..2 behind, cached
    run_to_completion();
    auto b = submit(letters("abcdefghijklmnoXYZ"), 2);
    EXPECT_EQ(step().chunks, (std::vector<Chunk>{{b.request, 0, 12, 6}}));
    EXPECT_EQ(b.request->usage.cached_tokens, 12);
    run_to_completion();
    EXPECT_EQ(drain(*b.stream).tokens[0], expected_greedy('Z', 2));
}

}  // namespace scheduler_test
}  // namespace
}  // namespace tempered
