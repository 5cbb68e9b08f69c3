// The whole Engine (thread, queue, scheduler, postprocess) over a fake model and a tiny KV pool: what a
// client and the metrics see, without a GGUF file. The fake model's greedy output is known in advance
// (each letter is followed by the next one), so every expectation here is exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine_test_support.h"

namespace tempered {
namespace {
namespace engine_fake_model_test {

using testing::collect;
using testing::Collected;

using testing::CountingObserver;
using testing::FakeModel;

std::vector<int32_t> letters(const std::string& text) { return {text.begin(), text.end()}; }

// What the fake model generates greedily after `prompt`.
std::vector<int32_t> expected_greedy(const std::vector<int32_t>& prompt, int64_t count) {
    std::vector<int32_t> out;
    int32_t last = prompt.back();
    for (int64_t i = 0; i < count; ++i) out.push_back(last = testing::fake_next_token(last));
    return out;
}

GenerationOptions greedy(std::vector<int32_t> prompt, int64_t max_tokens) {
    GenerationOptions options;
    options.prompt = std::move(prompt);
    options.max_tokens = max_tokens;
    options.sampling.temperature = 0.0f;
    return options;
}

class EngineFakeModel : public ::testing::Test {
protected:
    Tokenizer tokenizer_ = testing::byte_tokenizer();
    FakeModel model_{tokenizer_.vocab_size()};
    CountingObserver observer_;
};

TEST_F(EngineFakeModel, GreedyRequestGeneratesWhatTheModelPrefers) {
    auto pool = testing::tiny_pool(32);
    Engine engine(model_, tokenizer_, *pool, EngineOptions{}, &observer_);
    auto result = collect(*engine.submit(greedy(letters("hello"), 6)).stream);
    EXPECT_FALSE(result.error);
    EXPECT_EQ(result.tokens[0], expected_greedy(letters("hello"), 6));
    EXPECT_EQ(result.text[0], "pqrstu");
    EXPECT_EQ(result.usage.prompt_tokens, 5);
    EXPECT_EQ(result.usage.completion_tokens, 6);
    EXPECT_EQ(observer_.outcomes(), std::vector<RequestOutcome>{RequestOutcome::Length});
}

TEST_F(EngineFakeModel, PrefixLookupIsCountedOncePerRequestWhileItWaitsForAdmission) {
    // The first request holds 2 of 8 blocks at first and grows to 7. The second shares its first block
    // (4 tokens) and needs 5 more for its prompt: while the first runs, that would leave it no block to
    // grow into (the anti-thrash rule), so the second is turned away at every step until the first
    // finishes, then admitted once.
    auto pool = testing::tiny_pool(8);
    Engine engine(model_, tokenizer_, *pool, EngineOptions{}, &observer_);
    const auto first_prompt = letters("abcdefgh");
    const auto second_prompt = letters("abcdIJKLMNOPQRSTUVWXYZ01");
    std::unique_lock hold_steps(model_.gate);
    auto first = engine.submit(greedy(first_prompt, 20)).stream;
    auto second = engine.submit(greedy(second_prompt, 2)).stream;
    hold_steps.unlock();
    auto first_result = collect(*first);
    auto second_result = collect(*second);
    ASSERT_FALSE(first_result.error);
    ASSERT_FALSE(second_result.error);
    EXPECT_EQ(observer_.prefix_lookups(), 2);
    EXPECT_EQ(observer_.looked_up_tokens(), 8 + 24);
    EXPECT_EQ(first_result.usage.cached_tokens, 0);
    EXPECT_EQ(second_result.usage.cached_tokens, 4);
    EXPECT_EQ(observer_.cached_tokens(), 4);
    EXPECT_EQ(observer_.preemptions(), 0);
}

TEST_F(EngineFakeModel, RequestThatCanNeverFitIsRefusedAndReportedAsFailed) {
    auto pool = testing::tiny_pool(4);  // 16 positions
    Engine engine(model_, tokenizer_, *pool, EngineOptions{}, &observer_);
    auto result = collect(*engine.submit(greedy(letters(std::string(40, 'a')), 4)).stream);
    ASSERT_TRUE(result.error);
    EXPECT_NE(result.error->find("does not fit in the KV cache"), std::string::npos);
    EXPECT_EQ(observer_.outcomes(), std::vector<RequestOutcome>{RequestOutcome::Error});
    EXPECT_EQ(pool->used_block_count(), 0);
    EXPECT_EQ(model_.forward_calls, 0);
}

TEST_F(EngineFakeModel, ShutdownReportsEveryUnfinishedRequestOnce) {
    model_.delay_per_step = std::chrono::milliseconds(2);
    auto pool = testing::tiny_pool(64);
    std::vector<std::shared_ptr<GenerationStream>> streams;
    {
        EngineOptions options;
        options.max_running = 1;  // the second request waits, the third may not even be taken yet
        Engine engine(model_, tokenizer_, *pool, options, &observer_);
        for (int i = 0; i < 3; ++i) streams.push_back(engine.submit(greedy(letters("abc"), 200)).stream);
        while (!streams[0]->next(std::chrono::milliseconds(50))) {}
    }
    for (auto& stream : streams) {
        auto result = collect(*stream);
        ASSERT_TRUE(result.error);
        EXPECT_NE(result.error->find("shutting down"), std::string::npos);
    }
    EXPECT_EQ(observer_.outcomes(), std::vector<RequestOutcome>(3, RequestOutcome::Error));
}

TEST_F(EngineFakeModel, ChoicesShareOnePrefill) {
    auto pool = testing::tiny_pool(64);
    Engine engine(model_, tokenizer_, *pool, EngineOptions{}, &observer_);
    auto options = greedy(letters("abcdefghij"), 5);
    options.n = 3;
    auto result = collect(*engine.submit(options).stream, 3);
    ASSERT_FALSE(result.error);
    for (int choice = 0; choice < 3; ++choice)
        EXPECT_EQ(result.tokens[static_cast<size_t>(choice)], expected_greedy(options.prompt, 5)) << choice;
    // The prompt once, then four decode steps of each of three choices.
    EXPECT_EQ(model_.forward_tokens, 10 + 3 * 4);
    EXPECT_EQ(result.usage.completion_tokens, 15);
    EXPECT_EQ(observer_.prefix_lookups(), 1);
}

TEST_F(EngineFakeModel, SmallPoolPreemptsAndStillCompletesEveryRequestExactly) {
    // Each request ends holding 6 blocks (24 positions); 10 blocks hold one and a half of them.
    auto pool = testing::tiny_pool(10);
    Engine engine(model_, tokenizer_, *pool, EngineOptions{8, 64, 64}, &observer_);
    std::vector<std::vector<int32_t>> prompts;
    std::vector<std::shared_ptr<GenerationStream>> streams;
    std::unique_lock hold_steps(model_.gate);
    for (int i = 0; i < 4; ++i) {
        prompts.push_back(letters(std::string(1, static_cast<char>('a' + i)) + "bcd"));
        streams.push_back(engine.submit(greedy(prompts.back(), 20)).stream);
    }
    hold_steps.unlock();
    for (size_t i = 0; i < streams.size(); ++i) {
        auto result = collect(*streams[i]);
        ASSERT_FALSE(result.error) << *result.error;
        EXPECT_EQ(result.tokens[0], expected_greedy(prompts[i], 20)) << i;
    }
    EXPECT_GT(observer_.preemptions(), 0);
    EXPECT_EQ(observer_.outcomes(), std::vector<RequestOutcome>(4, RequestOutcome::Length));
}

TEST_F(EngineFakeModel, AWindowModelRunsALongRequestInAPoolThatHoldsItsWindowOnly) {
    // Layer 0 sees the last 6 positions: 44 tokens end holding 11 global blocks and at most 3 of the
    // window, 14 in all, where a cache without the window would hold 22. The fake model refuses any
    // step whose window lacks a block.
    auto pool = testing::tiny_pool(14, testing::tiny_window_kv_shape());
    Engine engine(model_, tokenizer_, *pool, EngineOptions{}, &observer_);
    auto result = collect(*engine.submit(greedy(letters("abcd"), 40)).stream);
    ASSERT_FALSE(result.error) << *result.error;
    EXPECT_EQ(result.tokens[0], expected_greedy(letters("abcd"), 40));
    EXPECT_EQ(observer_.preemptions(), 0);
    EXPECT_EQ(engine.stats().kv_blocks_total, 14);
    EXPECT_EQ(pool->used_block_count(), 0);
}

TEST_F(EngineFakeModel, CancelledRequestsAreReportedAsAbortedAndFreeTheirBlocks) {
    model_.delay_per_step = std::chrono::milliseconds(1);
    auto pool = testing::tiny_pool(64);
    Engine engine(model_, tokenizer_, *pool, EngineOptions{}, &observer_);
    std::vector<std::shared_ptr<GenerationStream>> streams;
    for (int i = 0; i < 3; ++i) streams.push_back(engine.submit(greedy(letters("abc"), 200)).stream);
    for (auto& stream : streams) {
        while (!stream->next(std::chrono::milliseconds(50))) {}
        stream->cancel();
    }
    for (int i = 0; i < 500 && !(engine.idle() && pool->used_block_count() == 0); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_TRUE(engine.idle());
    EXPECT_EQ(pool->used_block_count(), 0);
    EXPECT_EQ(observer_.outcomes(), std::vector<RequestOutcome>(3, RequestOutcome::Abort));
}

}  // namespace engine_fake_model_test
}  // namespace
}  // namespace tempered
