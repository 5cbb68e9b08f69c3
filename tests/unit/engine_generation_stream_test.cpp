// GenerationStream: the queue between the engine and a request's reader stays bounded when the reader
// stops taking events.
#include <gtest/gtest.h>

#include "engine/generation.h"

namespace tempered {
namespace {
namespace engine_generation_stream_test {

using namespace std::chrono_literals;

GenerationEvent token_event(int32_t token) {
    GenerationEvent event;
    ChoiceDelta delta;
    delta.tokens = {token};
    delta.text = "t";
    event.deltas.push_back(delta);
    return event;
}

TEST(GenerationStream, AReaderThatTakesNothingPastTheBoundCancelsTheRequestWithAnError) {
    GenerationStream stream(/*max_undelivered=*/3);
    for (int32_t token = 0; token < 3; ++token) stream.push(token_event(token));
    EXPECT_FALSE(stream.cancelled());
    stream.push(token_event(3));  // one too many: the request ends here
    EXPECT_TRUE(stream.cancelled());
    stream.push(token_event(4));  // the engine's pushes until it drops the request are not kept

    for (int32_t token = 0; token < 3; ++token) {
        auto event = stream.next(0ms);
        ASSERT_TRUE(event);
        ASSERT_EQ(event->deltas.size(), 1u);
        EXPECT_EQ(event->deltas[0].tokens, std::vector<int32_t>{token});
    }
    auto last = stream.next(0ms);
    ASSERT_TRUE(last);
    EXPECT_TRUE(last->done);
    ASSERT_TRUE(last->error);
    EXPECT_NE(last->error->find("did not read"), std::string::npos);
    EXPECT_FALSE(stream.next(0ms));
}

TEST(GenerationStream, AReaderThatKeepsUpNeverHitsTheBound) {
    GenerationStream stream(/*max_undelivered=*/2);
    for (int32_t token = 0; token < 100; ++token) {
        stream.push(token_event(token));
        ASSERT_TRUE(stream.next(0ms));
    }
    EXPECT_FALSE(stream.cancelled());
}

TEST(GenerationStream, TheLastEventIsKeptEvenAtTheBound) {
    GenerationStream stream(/*max_undelivered=*/1);
    stream.push(token_event(0));
    GenerationEvent done;
    done.done = true;
    stream.push(done);
    EXPECT_FALSE(stream.cancelled());
    ASSERT_TRUE(stream.next(0ms));
    auto last = stream.next(0ms);
    ASSERT_TRUE(last);
    EXPECT_TRUE(last->done);
    EXPECT_FALSE(last->error);
}

}  // namespace engine_generation_stream_test
}  // namespace
}  // namespace tempered
