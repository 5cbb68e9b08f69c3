// ReadDeadline and ClientConnectionLimit: the bookkeeping behind the HTTP server's slow-client limits.
#include <gtest/gtest.h>

#include "http/client_connection_limit.h"
#include "http/read_deadline.h"

namespace tempered::http {
namespace {
namespace http_read_deadline_test {

using namespace std::chrono_literals;
using Clock = ReadDeadline::Clock;

TEST(ReadDeadline, WithoutAPhaseEachWaitIsTheReadTimeout) {
    ReadDeadline deadline;
    const auto now = Clock::now();
    EXPECT_EQ(deadline.next_wait(30000ms, now), 30000ms);
    EXPECT_FALSE(deadline.passed(now + 1h));
}

TEST(ReadDeadline, AWaitIsCutToTheTimeLeftAndIsZeroOncePassed) {
    ReadDeadline deadline;
    const auto now = Clock::now();
    deadline.start(ReadDeadline::Phase::Header, now + 2500ms);
    EXPECT_EQ(deadline.phase(), ReadDeadline::Phase::Header);
    EXPECT_EQ(deadline.next_wait(30000ms, now), 2500ms);
    EXPECT_EQ(deadline.next_wait(1000ms, now), 1000ms);  // the per-read timeout still applies
    EXPECT_EQ(deadline.next_wait(30000ms, now + 2400ms), 100ms);
    EXPECT_EQ(deadline.next_wait(30000ms, now + 2499500us), 1ms);  // rounded up, never 0 before the deadline
    EXPECT_FALSE(deadline.passed(now + 2499ms));
    EXPECT_EQ(deadline.next_wait(30000ms, now + 2500ms), 0ms);
    EXPECT_EQ(deadline.next_wait(30000ms, now + 1h), 0ms);
    EXPECT_TRUE(deadline.passed(now + 2500ms));
}

TEST(ReadDeadline, TheBodyPhaseHasItsOwnDeadlineAndClearEndsIt) {
    ReadDeadline deadline;
    const auto now = Clock::now();
    deadline.start(ReadDeadline::Phase::Header, now + 1s);
    deadline.start(ReadDeadline::Phase::Body, now + 30s);
    EXPECT_EQ(deadline.phase(), ReadDeadline::Phase::Body);
    EXPECT_FALSE(deadline.passed(now + 2s));
    EXPECT_EQ(deadline.next_wait(60000ms, now + 2s), 28000ms);
    deadline.clear();
    EXPECT_EQ(deadline.phase(), ReadDeadline::Phase::None);
    EXPECT_FALSE(deadline.passed(now + 1h));
    EXPECT_EQ(deadline.next_wait(60000ms, now + 1h), 60000ms);
}

TEST(ClientConnectionLimit, RefusesPastTheLimitPerAddressAndFreesOnClose) {
    ClientConnectionLimit limit(2);
    EXPECT_TRUE(limit.try_open("127.0.0.1"));
    EXPECT_TRUE(limit.try_open("127.0.0.1"));
    EXPECT_FALSE(limit.try_open("127.0.0.1"));
    EXPECT_EQ(limit.open_from("127.0.0.1"), 2u);  // the refused one is not counted
    EXPECT_TRUE(limit.try_open("10.0.0.7"));      // another address has its own count
    limit.close("127.0.0.1");
    EXPECT_EQ(limit.open_from("127.0.0.1"), 1u);
    EXPECT_TRUE(limit.try_open("127.0.0.1"));
    EXPECT_FALSE(limit.try_open("127.0.0.1"));
}

TEST(ClientConnectionLimit, AnIpv6ClientIsCountedByItsPrefix) {
    ClientConnectionLimit limit(2);
    // One host rotating through its /64: one count.
    EXPECT_TRUE(limit.try_open("2001:db8:1:2::1"));
    EXPECT_TRUE(limit.try_open("2001:db8:1:2:aaaa:bbbb:cccc:dddd"));
    EXPECT_FALSE(limit.try_open("2001:db8:1:2:ffff::9"));
    EXPECT_EQ(limit.open_from("2001:db8:1:2::77"), 2u);
    EXPECT_TRUE(limit.try_open("2001:db8:1:3::1"));  // the next /64 is another client
    limit.close("2001:db8:1:2::1");
    EXPECT_TRUE(limit.try_open("2001:db8:1:2::5"));
    EXPECT_EQ(client_key("2001:db8:1:2:aaaa::1", 64), "2001:db8:1:2::/64");
    EXPECT_EQ(client_key("2001:db8:1:2:aaaa::1", 48), "2001:db8:1::/48");
    EXPECT_EQ(client_key("::ffff:10.1.2.3", 64), "10.1.2.3");  // an IPv4 client behind a dual stack
    EXPECT_EQ(client_key("10.1.2.3", 64), "10.1.2.3");
    EXPECT_EQ(client_key("not an address", 64), "not an address");
    ClientConnectionLimit exact(1, 128);
    EXPECT_TRUE(exact.try_open("2001:db8::1"));
    EXPECT_TRUE(exact.try_open("2001:db8::2"));
}

TEST(ClientConnectionLimit, ZeroIsNoLimit) {
    ClientConnectionLimit limit(0);
    for (int i = 0; i < 1000; ++i) EXPECT_TRUE(limit.try_open("127.0.0.1"));
    limit.close("127.0.0.1");  // harmless
}

}  // namespace http_read_deadline_test
}  // namespace
}  // namespace tempered::http
