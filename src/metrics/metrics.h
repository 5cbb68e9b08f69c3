// Prometheus metrics of our own: counters, gauges and histograms, optionally in labelled families,
// rendered in the text exposition format (version 0.0.4) that Prometheus scrapes from /metrics.
//
//   metrics::Registry registry;
//   auto& running = registry.gauge("vllm:num_requests_running", "Requests in the batch.");
//   auto& tokens = registry.counter("tempered:generated_tokens_total", "Tokens generated.", {"model"});
//   auto& ttft = registry.histogram("tempered:time_to_first_token_seconds", "TTFT.", {0.05, 0.1, 0.5, 1});
//   running.get().set(3);  tokens.with({"smollm"}).inc(17);  ttft.get().observe(0.08);
//   std::string text = registry.render();
//
// Thread-safe: updates are lock-free atomics; creating a labelled child and rendering take a lock.
// References returned by the registry and by with() stay valid for the registry's lifetime.
// Names are checked when registered; an invalid name or a conflicting re-registration is a bug in
// our code and throws std::invalid_argument at start-up.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace tempered::metrics {

class Counter {
public:
    void inc(double amount = 1.0);  // amount >= 0; a negative amount is ignored
    double value() const { return value_.load(std::memory_order_relaxed); }

private:
    std::atomic<double> value_{0.0};
};

class Gauge {
public:
    void set(double value) { value_.store(value, std::memory_order_relaxed); }
    void add(double amount) { value_.fetch_add(amount, std::memory_order_relaxed); }
    void inc() { add(1.0); }
    void dec() { add(-1.0); }
    double value() const { return value_.load(std::memory_order_relaxed); }

private:
    std::atomic<double> value_{0.0};
};

class Histogram {
public:
    // `upper_bounds` ascending and finite; the +Inf bucket is implicit.
    explicit Histogram(std::vector<double> upper_bounds);
    void observe(double value);

    struct Snapshot {
        std::vector<double> upper_bounds;
        std::vector<uint64_t> cumulative_counts;  // one per bound, then +Inf (== count)
        double sum = 0.0;
        uint64_t count = 0;
    };
    Snapshot snapshot() const;

private:
    std::vector<double> upper_bounds_;
    std::unique_ptr<std::atomic<uint64_t>[]> bucket_counts_;  // per bucket, +Inf last; not cumulative
    std::atomic<double> sum_{0.0};
};

// Bucket helpers: {start, start*factor, ...} (count values), and {start, start+width, ...}.
std::vector<double> exponential_buckets(double start, double factor, int count);
std::vector<double> linear_buckets(double start, double width, int count);

enum class MetricType { Counter, Gauge, Histogram };

// All metrics of one name: one child per combination of label values.
template <class Metric>
class Family {
public:
    // The child for these label values (as many as the family has label names), created on first use.
    Metric& with(const std::vector<std::string>& label_values);
    // The child of a family without labels.
    Metric& get() { return with({}); }

private:
    friend class Registry;
    Family(std::string name, std::string help, std::vector<std::string> label_names,
           std::function<std::unique_ptr<Metric>()> make)
        : name_(std::move(name)),
          help_(std::move(help)),
          label_names_(std::move(label_names)),
          make_(std::move(make)) {}

    std::string name_;
    std::string help_;
    std::vector<std::string> label_names_;
    std::function<std::unique_ptr<Metric>()> make_;
    mutable std::mutex mutex_;
    std::map<std::vector<std::string>, std::unique_ptr<Metric>> children_;
};

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;
using HistogramFamily = Family<Histogram>;

class Registry {
public:
    Registry();
    ~Registry();
    Registry(const Registry&) = delete;
    Registry& operator=(const Registry&) = delete;

    // Registering a name again with the same type and labels returns the existing family.
    CounterFamily& counter(const std::string& name, const std::string& help, std::vector<std::string> label_names = {});
    GaugeFamily& gauge(const std::string& name, const std::string& help, std::vector<std::string> label_names = {});
    HistogramFamily& histogram(const std::string& name, const std::string& help, std::vector<double> upper_bounds,
                               std::vector<std::string> label_names = {});

    // Runs before every render(): the place to copy values that are cheaper to read than to track
    // (queue lengths, KV-cache usage) into gauges.
    void on_collect(std::function<void()> hook);

    // The text exposition format: families in registration order, children sorted by label values.
    std::string render() const;

    static constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

private:
    struct Entry;
    Entry& add(const std::string& name, const std::string& help, MetricType type,
               const std::vector<std::string>& label_names, const std::vector<double>& upper_bounds);

    mutable std::mutex mutex_;
    std::vector<std::unique_ptr<Entry>> entries_;
    std::vector<std::function<void()>> collect_hooks_;
};

// Name rules of the exposition format. Metric names may contain colons (`vllm:num_requests_running`);
// label names may not, and names starting with "__" are reserved.
bool is_valid_metric_name(std::string_view name);
bool is_valid_label_name(std::string_view name);
// Escaping for label values (\\, \", \n) and HELP text (\\, \n).
std::string escape_label_value(std::string_view value);
std::string escape_help(std::string_view help);
// Sample values: shortest round-trip decimal, "+Inf", "-Inf", "NaN".
std::string format_value(double value);

}  // namespace tempered::metrics
