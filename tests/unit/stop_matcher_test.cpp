#include <gtest/gtest.h>

#include "output/stop_matcher.h"

namespace tempered {
namespace {
namespace stop_matcher_test {

TEST(StopMatcher, StopStringSplitAcrossPiecesIsNeverEmitted) {
    StopMatcher matcher({"</end>"});
    std::string emitted;
    for (const char* piece : {"Hello </", "en", "d> world"}) {
        auto out = matcher.push(piece);
        emitted += out.text;
        if (out.stopped) break;
    }
    EXPECT_EQ(emitted, "Hello ");
}

TEST(StopMatcher, HeldBackTextIsReleasedWhenItCannotBeAStop) {
    StopMatcher matcher({"STOP"});
    EXPECT_EQ(matcher.push("abcST").text, "abc");
    auto out = matcher.push("x");
    EXPECT_EQ(out.text, "STx");
    EXPECT_FALSE(out.stopped);
    EXPECT_EQ(matcher.push("ST").text, "");
    EXPECT_EQ(matcher.flush(), "ST");
}

TEST(StopMatcher, EarliestOfSeveralStopsWins) {
    StopMatcher matcher({"world", "lo"});
    auto out = matcher.push("hello world");
    EXPECT_TRUE(out.stopped);
    EXPECT_EQ(out.text, "hel");
}

TEST(StopMatcher, NoStopsPassesEverythingThrough) {
    StopMatcher matcher({});
    EXPECT_EQ(matcher.push("abc").text, "abc");
    EXPECT_EQ(matcher.flush(), "");
}

}  // namespace stop_matcher_test
}  // namespace
}  // namespace tempered
