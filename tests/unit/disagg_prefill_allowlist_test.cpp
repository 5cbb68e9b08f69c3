// --disaggregation-allowed-prefill: which bootstrap targets a decode server may fetch KV from. Addresses compare
// as addresses, networks by their prefix, names as text (never resolved), ports when given.
#include <gtest/gtest.h>

#include "disagg/prefill_allowlist.h"

namespace tempered {
namespace {
namespace disagg_prefill_allowlist_test {

TEST(PrefillAllowlist, LoopbackByDefault) {
    const PrefillAllowlist list = PrefillAllowlist::loopback();
    EXPECT_TRUE(list.allows("127.0.0.1", 8998));
    EXPECT_TRUE(list.allows("127.3.2.1", 1));
    EXPECT_TRUE(list.allows("::1", 8998));
    EXPECT_TRUE(list.allows("[::1]", 8998));
    EXPECT_TRUE(list.allows("0:0:0:0:0:0:0:1", 8998));
    EXPECT_TRUE(list.allows("LocalHost", 8998));
    EXPECT_TRUE(list.allows("::ffff:127.0.0.1", 8998));  // IPv4-mapped
    EXPECT_FALSE(list.allows("10.0.0.1", 8998));
    EXPECT_FALSE(list.allows("128.0.0.1", 8998));
    EXPECT_FALSE(list.allows("example.com", 8998));
    EXPECT_FALSE(list.allows("localhost.example.com", 8998));
    EXPECT_FALSE(list.allows("", 8998));
}

TEST(PrefillAllowlist, HostsPortsAndNetworks) {
    auto list = PrefillAllowlist::parse(
        {"10.0.0.0/8", "prefill-0.tempered:9001", "[2001:db8::5]:9002", "fd00::/8", "192.168.1.7"});
    ASSERT_TRUE(list.ok()) << list.error().message;
    EXPECT_TRUE(list->allows("10.244.3.17", 1234));
    EXPECT_FALSE(list->allows("11.0.0.1", 1234));
    EXPECT_TRUE(list->allows("prefill-0.tempered", 9001));
    EXPECT_FALSE(list->allows("prefill-0.tempered", 9002));  // the port is part of the entry
    EXPECT_TRUE(list->allows("2001:db8::5", 9002));
    EXPECT_FALSE(list->allows("2001:db8::5", 9001));
    EXPECT_TRUE(list->allows("fd12:3456::1", 7));
    EXPECT_TRUE(list->allows("192.168.1.7", 65535));
    EXPECT_FALSE(list->allows("192.168.1.8", 65535));
    EXPECT_FALSE(list->allows("127.0.0.1", 8998));  // a list replaces the default
    EXPECT_EQ(list->entries().size(), 5u);
}

TEST(PrefillAllowlist, BadEntriesNameThemselves) {
    for (const char* entry : {"10.0.0.0/33", "fd00::/129", "host:0", "host:70000", "[::1", "[::1]x", "/8", "",
                              "example.com/8", "host:port"}) {
        auto list = PrefillAllowlist::parse({entry});
        ASSERT_FALSE(list.ok()) << entry;
        EXPECT_NE(list.error().message.find(std::string("'") + entry + "'"), std::string::npos) << list.error().message;
    }
}

}  // namespace disagg_prefill_allowlist_test
}  // namespace
}  // namespace tempered
