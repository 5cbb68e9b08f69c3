// DryBreakerCache: one vocabulary scan, one DryBreakers per list, shared by the requests that send it.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "server/dry_breaker_cache.h"

namespace tempered {
namespace {
namespace server_dry_breaker_cache_test {

// A vocabulary of single characters plus "a:"; text tokenizes one character per token.
const std::vector<std::string> kTexts = {"a", "b", "\n", ":", "a:"};

DryVocabulary fake_vocabulary(std::atomic<int>& scans) {
    DryVocabulary vocabulary;
    vocabulary.token_texts = [&scans] {
        ++scans;
        return kTexts;
    };
    vocabulary.tokenize = [](std::string_view text) {
        std::vector<int32_t> ids;
        for (char c : text) {
            for (size_t id = 0; id < 4; ++id)
                if (kTexts[id] == std::string(1, c)) ids.push_back(static_cast<int32_t>(id));
        }
        return ids;
    };
    return vocabulary;
}

TEST(DryBreakerCache, SameListSamePointerAndOneVocabularyScan) {
    std::atomic<int> scans = 0;
    DryBreakerCache cache(fake_vocabulary(scans));
    const std::vector<std::string> newline_colon = {"\n", ":"};
    const auto first = cache.breakers_for(newline_colon);
    ASSERT_NE(first, nullptr);
    EXPECT_TRUE(first->is_whole_breaker(2));  // "\n"
    EXPECT_TRUE(first->is_whole_breaker(4));  // "a:" contains ":"
    EXPECT_FALSE(first->is_whole_breaker(0));
    EXPECT_EQ(cache.breakers_for(newline_colon), first);
    const auto other = cache.breakers_for({"\n"});
    EXPECT_NE(other, first);
    EXPECT_FALSE(other->is_whole_breaker(3));
    EXPECT_EQ(cache.breakers_for(newline_colon), first);
    EXPECT_EQ(scans.load(), 1);
}

TEST(DryBreakerCache, KeepsABoundedNumberOfListsDroppingTheLeastRecentlyUsed) {
    std::atomic<int> scans = 0;
    DryBreakerCache cache(fake_vocabulary(scans));
    const auto kept = cache.breakers_for({"a"});
    const auto dropped = cache.breakers_for({"b"});
    for (size_t i = 0; i + 1 < DryBreakerCache::kCachedLists; ++i) {
        cache.breakers_for({"a"});  // "a" stays the most recently used
        cache.breakers_for({std::string(i + 2, 'x')});
    }
    EXPECT_EQ(cache.breakers_for({"a"}), kept);
    EXPECT_NE(cache.breakers_for({"b"}), dropped);  // rebuilt: it fell out
    EXPECT_EQ(scans.load(), 1);
}

TEST(DryBreakerCache, ConcurrentRequestsForOneListShareOneResult) {
    std::atomic<int> scans = 0;
    DryBreakerCache cache(fake_vocabulary(scans));
    std::vector<std::shared_ptr<const DryBreakers>> results(8);
    std::vector<std::thread> threads;
    for (size_t i = 0; i < results.size(); ++i)
        threads.emplace_back([&, i] { results[i] = cache.breakers_for({"\n", ":"}); });
    for (auto& thread : threads) thread.join();
    for (const auto& result : results) EXPECT_EQ(result, results[0]);
    EXPECT_EQ(scans.load(), 1);
}

}  // namespace server_dry_breaker_cache_test
}  // namespace
}  // namespace tempered
