// Percentiles against numpy.percentile (method="linear", numpy's default; values computed with numpy
// 2 and pasted here), and the summary of a set of request records.
#include <gtest/gtest.h>

#include "loadgen/report.h"

namespace tempered::loadgen {
namespace {
namespace loadgen_stats_test {

using std::chrono::milliseconds;

TEST(LoadgenPercentile, MatchesNumpyLinear) {
    struct Case {
        std::vector<double> values;
        double q, expected;
    };
    const std::vector<Case> cases = {
        {{15, 20, 35, 40, 50}, 0, 15.0},
        {{15, 20, 35, 40, 50}, 25, 20.0},
        {{15, 20, 35, 40, 50}, 50, 35.0},
        {{15, 20, 35, 40, 50}, 90, 46.0},
        {{15, 20, 35, 40, 50}, 99, 49.6},
        {{15, 20, 35, 40, 50}, 100, 50.0},
        {{1, 2}, 25, 1.25},
        {{1, 2}, 99, 1.99},
        {{10, 7, 3, 1, 9, 4, 8, 2, 6, 5}, 25, 3.25},  // unsorted input
        {{10, 7, 3, 1, 9, 4, 8, 2, 6, 5}, 50, 5.5},
        {{10, 7, 3, 1, 9, 4, 8, 2, 6, 5}, 90, 9.1},
        {{10, 7, 3, 1, 9, 4, 8, 2, 6, 5}, 99, 9.91},
        {{0.25, 100.0, 7.5, 42.0}, 25, 5.6875},
        {{0.25, 100.0, 7.5, 42.0}, 50, 24.75},
        {{0.25, 100.0, 7.5, 42.0}, 90, 82.6},
        {{0.25, 100.0, 7.5, 42.0}, 99, 98.26},
    };
    for (const Case& c : cases) {
        const auto got = percentile(c.values, c.q);
        ASSERT_TRUE(got.has_value());
        EXPECT_NEAR(*got, c.expected, 1e-9) << "q=" << c.q << " of " << c.values.size() << " values";
    }
}

TEST(LoadgenPercentile, OneValueAndNone) {
    for (double q : {0.0, 50.0, 99.0, 100.0}) EXPECT_EQ(percentile({3.5}, q), 3.5);
    EXPECT_FALSE(percentile({}, 50).has_value());
    EXPECT_FALSE(describe({}).has_value());
}

TEST(LoadgenPercentile, DescribeIsOrdered) {
    const auto d = describe({5, 1, 4, 2, 3});
    ASSERT_TRUE(d);
    EXPECT_EQ(d->count, 5u);
    EXPECT_DOUBLE_EQ(d->mean, 3.0);
    EXPECT_DOUBLE_EQ(d->p50, 3.0);
    EXPECT_DOUBLE_EQ(d->min, 1.0);
    EXPECT_DOUBLE_EQ(d->max, 5.0);
    EXPECT_LE(d->p50, d->p90);
    EXPECT_LE(d->p90, d->p99);
}

// A streamed record: sent at `start`, text chunks at the given milliseconds, done at `end_ms`.
RequestRecord streamed(Clock::time_point start, std::vector<double> chunks_ms, double end_ms, int64_t prompt,
                       int64_t completion) {
    RequestRecord record;
    record.start = start;
    record.end = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(end_ms));
    record.ok = true;
    for (double ms : chunks_ms) record.content_times_s.push_back(ms / 1e3);
    record.prompt_tokens = prompt;
    record.completion_tokens = completion;
    return record;
}

RequestRecord failed(std::string error) {
    RequestRecord record;
    record.error = std::move(error);
    return record;
}

TEST(LoadgenSummary, AggregatesCompletedRequestsAndCountsErrors) {
    const auto t0 = Clock::now();
    std::vector<RequestRecord> records = {
        streamed(t0, {100, 110, 130}, 130, 32, 3),  // TTFT 100, ITL 10 and 20, TPOT (130-100)/2 = 15
        streamed(t0, {200, 240}, 300, 30, 4),       // TTFT 200, ITL 40, TPOT (300-200)/3 = 33.33
        failed("HTTP 429: too many requests"),     failed("timed out after 1 s"), failed("HTTP 429: too many requests"),
    };
    const BenchSummary s = summarize(records, 2.0);
    EXPECT_EQ(s.completed, 2);
    EXPECT_EQ(s.failed, 3);
    EXPECT_DOUBLE_EQ(s.duration_s, 2.0);
    EXPECT_DOUBLE_EQ(s.request_throughput, 1.0);
    EXPECT_DOUBLE_EQ(s.output_token_throughput, 3.5);  // (3 + 4) / 2 s
    EXPECT_DOUBLE_EQ(s.total_token_throughput, 34.5);  // (62 + 7) / 2 s
    ASSERT_TRUE(s.prompt_tokens);
    EXPECT_EQ(s.prompt_tokens->total, 62);
    EXPECT_DOUBLE_EQ(s.prompt_tokens->mean, 31.0);
    EXPECT_EQ(s.output_tokens.total, 7);
    EXPECT_EQ(s.output_tokens.min, 3);
    EXPECT_EQ(s.output_tokens.max, 4);

    ASSERT_TRUE(s.ttft_ms);
    EXPECT_NEAR(s.ttft_ms->mean, 150, 1e-3);
    EXPECT_NEAR(s.ttft_ms->p50, 150, 1e-3);
    ASSERT_TRUE(s.itl_ms);  // pooled gaps: 10, 20, 40
    EXPECT_EQ(s.itl_ms->count, 3u);
    EXPECT_NEAR(s.itl_ms->p50, 20, 1e-3);
    EXPECT_NEAR(s.itl_ms->mean, 70.0 / 3, 1e-3);
    ASSERT_TRUE(s.tpot_ms);
    EXPECT_NEAR(s.tpot_ms->mean, (15.0 + 100.0 / 3) / 2, 1e-3);
    ASSERT_TRUE(s.e2e_ms);
    EXPECT_NEAR(s.e2e_ms->max, 300, 1e-3);

    ASSERT_EQ(s.errors.size(), 2u);  // most frequent first
    EXPECT_EQ(s.errors[0], (std::pair<std::string, int64_t>{"HTTP 429: too many requests", 2}));
    EXPECT_EQ(s.errors[1], (std::pair<std::string, int64_t>{"timed out after 1 s", 1}));
}

TEST(LoadgenSummary, NonStreamedRequestsHaveNoFirstTokenTimes) {
    RequestRecord record;
    record.start = Clock::now();
    record.end = record.start + milliseconds(500);
    record.ok = true;
    record.prompt_tokens = 10;
    record.completion_tokens = 16;
    const BenchSummary s = summarize(std::vector<RequestRecord>{record}, 0.5);
    EXPECT_FALSE(s.ttft_ms);  // absent, not the end-to-end latency
    EXPECT_FALSE(s.itl_ms);
    EXPECT_FALSE(s.tpot_ms);
    ASSERT_TRUE(s.e2e_ms);
    EXPECT_NEAR(s.e2e_ms->mean, 500, 1e-3);
    EXPECT_EQ(s.output_tokens.total, 16);
}

TEST(LoadgenSummary, WithoutUsageOutputTokensAreTextChunks) {
    RequestRecord record = streamed(Clock::now(), {10, 20, 30, 40}, 45, 0, 0);
    record.prompt_tokens.reset();
    record.completion_tokens.reset();
    const BenchSummary s = summarize(std::vector<RequestRecord>{record}, 1.0);
    EXPECT_EQ(s.output_tokens.total, 4);
    EXPECT_FALSE(s.prompt_tokens);
}

TEST(LoadgenSummary, AllFailed) {
    const BenchSummary s = summarize(std::vector<RequestRecord>{failed("x"), failed("x")}, 1.0);
    EXPECT_EQ(s.completed, 0);
    EXPECT_EQ(s.failed, 2);
    EXPECT_FALSE(s.e2e_ms);
    EXPECT_DOUBLE_EQ(s.output_token_throughput, 0);
}

}  // namespace loadgen_stats_test
}  // namespace
}  // namespace tempered::loadgen
