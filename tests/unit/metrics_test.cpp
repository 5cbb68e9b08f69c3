#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "metrics/metrics.h"

namespace tempered::metrics {
namespace {
namespace metrics_test {

TEST(Metrics, CounterAndGaugeText) {
    Registry registry;
    registry.counter("tempered:requests_total", "Requests received.").get().inc(3);
    auto& running = registry.gauge("vllm:num_requests_running", "Requests in the running batch.").get();
    running.set(4);
    running.dec();
    EXPECT_EQ(registry.render(),
              "# HELP tempered:requests_total Requests received.\n"
              "# TYPE tempered:requests_total counter\n"
              "tempered:requests_total 3\n"
              "# HELP vllm:num_requests_running Requests in the running batch.\n"
              "# TYPE vllm:num_requests_running gauge\n"
              "vllm:num_requests_running 3\n");
}

TEST(Metrics, CounterIgnoresNegativeAndAcceptsFractions) {
    Counter counter;
    counter.inc(0.5);
    counter.inc(-10);
    counter.inc();
    EXPECT_DOUBLE_EQ(counter.value(), 1.5);
}

TEST(Metrics, LabelledFamiliesSortedAndEscaped) {
    Registry registry;
    auto& finished = registry.counter("tempered:requests_finished_total", "Finished requests.", {"model", "reason"});
    finished.with({"m2", "stop"}).inc();
    finished.with({"m1", "length"}).inc(2);
    finished.with({"m1", "length"}).inc();
    finished.with({"we\"ird\\name\nx", "stop"}).inc();
    EXPECT_EQ(registry.render(),
              "# HELP tempered:requests_finished_total Finished requests.\n"
              "# TYPE tempered:requests_finished_total counter\n"
              "tempered:requests_finished_total{model=\"m1\",reason=\"length\"} 3\n"
              "tempered:requests_finished_total{model=\"m2\",reason=\"stop\"} 1\n"
              "tempered:requests_finished_total{model=\"we\\\"ird\\\\name\\nx\",reason=\"stop\"} 1\n");
    EXPECT_THROW(finished.with({"only-one"}), std::invalid_argument);
}

TEST(Metrics, HistogramBucketsSumAndCount) {
    Registry registry;
    auto& latency =
        registry.histogram("tempered:e2e_request_latency_seconds", "Request latency.", {0.1, 0.5, 1}, {"model"});
    Histogram& h = latency.with({"m"});
    h.observe(0.05);
    h.observe(0.1);  // on a bound: counts in that bucket
    h.observe(0.7);
    h.observe(3);
    EXPECT_EQ(registry.render(),
              "# HELP tempered:e2e_request_latency_seconds Request latency.\n"
              "# TYPE tempered:e2e_request_latency_seconds histogram\n"
              "tempered:e2e_request_latency_seconds_bucket{model=\"m\",le=\"0.1\"} 2\n"
              "tempered:e2e_request_latency_seconds_bucket{model=\"m\",le=\"0.5\"} 2\n"
              "tempered:e2e_request_latency_seconds_bucket{model=\"m\",le=\"1\"} 3\n"
              "tempered:e2e_request_latency_seconds_bucket{model=\"m\",le=\"+Inf\"} 4\n"
              "tempered:e2e_request_latency_seconds_sum{model=\"m\"} 3.85\n"
              "tempered:e2e_request_latency_seconds_count{model=\"m\"} 4\n");
}

TEST(Metrics, UnlabelledHistogramAndBucketHelpers) {
    Registry registry;
    registry.histogram("ttft_seconds", "Time to first token.", exponential_buckets(0.001, 10, 3)).get().observe(0.5);
    const std::string text = registry.render();
    EXPECT_NE(text.find("ttft_seconds_bucket{le=\"0.001\"} 0\n"), std::string::npos) << text;
    EXPECT_NE(text.find("ttft_seconds_bucket{le=\"+Inf\"} 1\n"), std::string::npos) << text;
    EXPECT_NE(text.find("ttft_seconds_sum 0.5\n"), std::string::npos) << text;
    EXPECT_NE(text.find("ttft_seconds_count 1\n"), std::string::npos) << text;
    EXPECT_EQ(linear_buckets(1, 2, 3), (std::vector<double>{1, 3, 5}));
    EXPECT_EQ(exponential_buckets(1, 2, 4), (std::vector<double>{1, 2, 4, 8}));
}

TEST(Metrics, NamesAndEscaping) {
    EXPECT_TRUE(is_valid_metric_name("vllm:num_requests_running"));
    EXPECT_TRUE(is_valid_metric_name("_x9"));
    EXPECT_FALSE(is_valid_metric_name("9x"));
    EXPECT_FALSE(is_valid_metric_name("a-b"));
    EXPECT_FALSE(is_valid_metric_name(""));
    EXPECT_TRUE(is_valid_label_name("model_name"));
    EXPECT_FALSE(is_valid_label_name("a:b"));
    EXPECT_FALSE(is_valid_label_name("__reserved"));
    EXPECT_EQ(escape_help("a\\b\nc\"d"), "a\\\\b\\nc\"d");
    EXPECT_EQ(format_value(3), "3");
    EXPECT_EQ(format_value(0.25), "0.25");
    EXPECT_EQ(format_value(HUGE_VAL), "+Inf");
    EXPECT_EQ(format_value(-HUGE_VAL), "-Inf");
    EXPECT_EQ(format_value(std::nan("")), "NaN");
}

TEST(Metrics, RegistrationRules) {
    Registry registry;
    auto& a = registry.counter("x_total", "x", {"l"});
    EXPECT_EQ(&registry.counter("x_total", "x", {"l"}), &a);  // same registration: same family
    EXPECT_THROW(registry.gauge("x_total", "x", {"l"}), std::invalid_argument);
    EXPECT_THROW(registry.counter("x_total", "x", {"other"}), std::invalid_argument);
    EXPECT_THROW(registry.counter("bad-name", "x"), std::invalid_argument);
    EXPECT_THROW(registry.counter("ok", "x", {"bad:label"}), std::invalid_argument);
    EXPECT_THROW(registry.histogram("h", "x", {1, 0.5}), std::invalid_argument);
    EXPECT_THROW(registry.histogram("h2", "x", {1}, {"le"}), std::invalid_argument);
}

TEST(Metrics, CollectHookRunsBeforeRender) {
    Registry registry;
    auto& waiting = registry.gauge("vllm:num_requests_waiting", "Queued requests.").get();
    int queue_length = 7;
    registry.on_collect([&] { waiting.set(queue_length); });
    EXPECT_NE(registry.render().find("vllm:num_requests_waiting 7\n"), std::string::npos);
    queue_length = 2;
    EXPECT_NE(registry.render().find("vllm:num_requests_waiting 2\n"), std::string::npos);
}

TEST(Metrics, ConcurrentUpdatesAreNotLost) {
    Registry registry;
    auto& counter = registry.counter("c_total", "c", {"thread"});
    auto& histogram = registry.histogram("h", "h", {1.0}).get();
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < 10000; ++i) {
                counter.with({std::to_string(t % 2)}).inc();
                histogram.observe(i % 2 ? 0.5 : 2.0);
                if (i % 1000 == 0) static_cast<void>(registry.render());
            }
        });
    }
    for (auto& thread : threads) thread.join();
    EXPECT_EQ(counter.with({"0"}).value() + counter.with({"1"}).value(), 40000);
    const Histogram::Snapshot snapshot = histogram.snapshot();
    EXPECT_EQ(snapshot.count, 40000u);
    EXPECT_EQ(snapshot.cumulative_counts[0], 20000u);
    EXPECT_DOUBLE_EQ(snapshot.sum, 20000 * 0.5 + 20000 * 2.0);
}

// promtool (Debian package `prometheus`) parses the exposition format (exit 1 on a format error) and
// lints it (exit 3). Its only lint we accept is the one about colons: they are legal in metric names,
// promtool reserves them by convention for recording rules, and vLLM's names (`vllm:...`) have them.
TEST(Metrics, PromtoolAcceptsTheOutput) {
    if (std::system("command -v promtool > /dev/null 2>&1") != 0) GTEST_SKIP() << "promtool not installed";
    Registry registry;
    registry.counter("tempered:prompt_tokens_total", "Prompt tokens processed.", {"model_name"})
        .with({"smol\"lm\\2\nx"})
        .inc(12);
    registry.gauge("vllm:num_requests_running", "Requests in the running batch.").get().set(2);
    registry.gauge("vllm:kv_cache_usage_perc", "KV-cache usage, 0 to 1.", {"model_name"}).with({"m"}).set(0.5);
    auto& ttft = registry.histogram("vllm:time_to_first_token_seconds", "Time to first token.\nSecond line.",
                                    {0.001, 0.01, 0.1, 1, 10}, {"model_name"});
    ttft.with({"m"}).observe(0.02);
    ttft.with({"n"}).observe(20);
    registry.histogram("tempered:empty_seconds", "Nothing observed.", {1}).get();
    const std::filesystem::path file =
        std::filesystem::temp_directory_path() / ("tempered_metrics_" + std::to_string(::getpid()) + ".txt");
    std::ofstream(file) << registry.render();
    const std::string command = "promtool check metrics < " + file.string() + " 2>&1";
    FILE* pipe = ::popen(command.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string output;
    char buffer[256];
    while (std::fgets(buffer, sizeof(buffer), pipe) != nullptr) output += buffer;
    const int status = ::pclose(pipe);
    std::filesystem::remove(file);
    ASSERT_TRUE(WIFEXITED(status)) << output;
    EXPECT_TRUE(WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 3) << output;
    std::istringstream lines(output);
    for (std::string line; std::getline(lines, line);) {
        EXPECT_NE(line.find("metric names should not contain ':'"), std::string::npos) << line;
    }
}

}  // namespace metrics_test
}  // namespace
}  // namespace tempered::metrics
