// Engine::flush_cache: served on the engine thread between steps; refused while requests run or wait
// (as SGLang refuses /flush_cache); bounded by its timeout when the engine is busy in a step.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "engine_test_support.h"

namespace tempered {
namespace {
namespace engine_cache_flush_test {

using namespace std::chrono_literals;

GenerationOptions greedy(const std::string& prompt, int64_t max_tokens) {
    GenerationOptions options;
    options.prompt = {prompt.begin(), prompt.end()};
    options.max_tokens = max_tokens;
    options.sampling.temperature = 0.0f;
    return options;
}

class EngineCacheFlush : public ::testing::Test {
protected:
    Tokenizer tokenizer_ = testing::byte_tokenizer();
    testing::FakeModel model_{tokenizer_.vocab_size()};
};

// 17 tokens: the first 16 fill whole blocks that get cached.
const std::string kPrompt = "abcdefghijklmnopq";

TEST_F(EngineCacheFlush, AnIdleEngineDropsItsCachedPrefixes) {
    auto pool = testing::tiny_pool(32);
    Engine engine(model_, tokenizer_, *pool, EngineOptions{});
    ASSERT_FALSE(testing::collect(*engine.submit(greedy(kPrompt, 2)).stream).error);
    const auto reused = testing::collect(*engine.submit(greedy(kPrompt, 2)).stream);
    ASSERT_GT(reused.usage.cached_tokens, 0);

    const std::optional<CacheFlush> flush = engine.flush_cache(5s);
    ASSERT_TRUE(flush);
    EXPECT_TRUE(flush->flushed);
    EXPECT_GT(flush->blocks_dropped, 0);
    EXPECT_EQ(testing::collect(*engine.submit(greedy(kPrompt, 2)).stream).usage.cached_tokens, 0);
}

TEST_F(EngineCacheFlush, IsRefusedWhileARequestRunsAndUnansweredWhileAStepHangs) {
    auto pool = testing::tiny_pool(64);
    Engine engine(model_, tokenizer_, *pool, EngineOptions{});
    ASSERT_FALSE(testing::collect(*engine.submit(greedy(kPrompt, 2)).stream).error);
    model_.delay_per_step = 10ms;  // the running request below lasts 30 steps, 300 ms or more
    std::unique_lock hold_steps(model_.gate);
    auto running = engine.submit(greedy(kPrompt, 30)).stream;
    // Refused at once if the engine sees the request still queued, else unanswered: the engine thread
    // is inside a step that waits on the gate, and the flush waits for the step to end.
    const std::optional<CacheFlush> early = engine.flush_cache(200ms);
    EXPECT_TRUE(!early || !early->flushed);
    auto during = std::async(std::launch::async, [&] { return engine.flush_cache(10s); });
    std::this_thread::sleep_for(50ms);  // let it queue before the steps go on
    hold_steps.unlock();
    const std::optional<CacheFlush> answer = during.get();
    ASSERT_TRUE(answer);
    EXPECT_FALSE(answer->flushed);
    EXPECT_EQ(answer->blocks_dropped, 0);
    ASSERT_FALSE(testing::collect(*running).error);
    model_.delay_per_step = 0ms;
    // Nothing was dropped: the prompt's blocks are still cached.
    EXPECT_GT(testing::collect(*engine.submit(greedy(kPrompt, 1)).stream).usage.cached_tokens, 0);
}

}  // namespace engine_cache_flush_test
}  // namespace
}  // namespace tempered
