// StreamSet: several engine streams read as one response, and what they cost so far.
#include <gtest/gtest.h>

#include "server/stream_set.h"

namespace tempered {
namespace {
namespace server_stream_set_test {

using namespace std::chrono_literals;

GenerationEvent tokens_event(int index, std::vector<int32_t> tokens, std::string text) {
    GenerationEvent event;
    ChoiceDelta delta;
    delta.index = index;
    delta.tokens = std::move(tokens);
    delta.text = std::move(text);
    event.deltas.push_back(std::move(delta));
    return event;
}

GenerationEvent done_event(GenerationUsage usage) {
    GenerationEvent event;
    event.done = true;
    event.usage = usage;
    return event;
}

TEST(StreamSet, ShiftsChoiceIndicesIntoTheResponsesNumbering) {
    auto first = std::make_shared<GenerationStream>();
    auto second = std::make_shared<GenerationStream>();
    StreamSet streams;
    streams.add(first, 0, 5);
    streams.add(second, 2, 7);
    second->push(tokens_event(1, {9}, "b"));
    const auto event = streams.next(100ms);
    ASSERT_TRUE(event);
    ASSERT_EQ(event->deltas.size(), 1u);
    EXPECT_EQ(event->deltas[0].index, 3);
    EXPECT_FALSE(streams.all_done());
}

// A request the client abandons never gets the engine's final usage: the set still knows the prompts
// it submitted and the tokens it has seen.
TEST(StreamSet, UsageCountsPromptsAndSeenTokensUntilTheEngineReportsItsOwn) {
    auto first = std::make_shared<GenerationStream>();
    auto second = std::make_shared<GenerationStream>();
    StreamSet streams;
    streams.add(first, 0, 5);
    streams.add(second, 1, 7);
    streams.add_scored_prompt(3);
    EXPECT_EQ(streams.usage().prompt_tokens, 15);
    EXPECT_EQ(streams.usage().completion_tokens, 0);

    first->push(tokens_event(0, {1, 2}, "ab"));
    second->push(tokens_event(0, {3}, "c"));
    ASSERT_TRUE(streams.next(100ms));
    ASSERT_TRUE(streams.next(100ms));
    EXPECT_EQ(streams.usage().completion_tokens, 3);

    // The engine's figures replace the estimate for a stream that ends (here with a cache hit).
    first->push(done_event({5, 4, 2}));
    ASSERT_TRUE(streams.next(100ms));
    const GenerationUsage usage = streams.usage();
    EXPECT_EQ(usage.prompt_tokens, 15);
    EXPECT_EQ(usage.cached_tokens, 4);
    EXPECT_EQ(usage.completion_tokens, 3);
    EXPECT_FALSE(streams.all_done());

    streams.cancel_all();
    EXPECT_FALSE(first->cancelled());  // already done
    EXPECT_TRUE(second->cancelled());
}

}  // namespace server_stream_set_test
}  // namespace
}  // namespace tempered
