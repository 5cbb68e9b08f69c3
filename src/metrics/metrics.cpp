#include "metrics/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

namespace tempered::metrics {

// ---- values ----

void Counter::inc(double amount) {
    if (amount > 0.0) value_.fetch_add(amount, std::memory_order_relaxed);
}

Histogram::Histogram(std::vector<double> upper_bounds) : upper_bounds_(std::move(upper_bounds)) {
    for (size_t i = 0; i < upper_bounds_.size(); ++i) {
        if (!std::isfinite(upper_bounds_[i]) || (i > 0 && upper_bounds_[i] <= upper_bounds_[i - 1])) {
            throw std::invalid_argument("histogram buckets must be finite and strictly ascending");
        }
    }
    bucket_counts_ = std::make_unique<std::atomic<uint64_t>[]>(upper_bounds_.size() + 1);
    for (size_t i = 0; i <= upper_bounds_.size(); ++i) bucket_counts_[i].store(0, std::memory_order_relaxed);
}

void Histogram::observe(double value) {
    // A value equal to a bound belongs to that bucket (le = "less or equal").
    const size_t bucket = static_cast<size_t>(std::lower_bound(upper_bounds_.begin(), upper_bounds_.end(), value) -
                                              upper_bounds_.begin());
    bucket_counts_[bucket].fetch_add(1, std::memory_order_relaxed);
    sum_.fetch_add(value, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::snapshot() const {
    Snapshot snapshot;
    snapshot.upper_bounds = upper_bounds_;
    uint64_t running = 0;
    for (size_t i = 0; i <= upper_bounds_.size(); ++i) {
        running += bucket_counts_[i].load(std::memory_order_relaxed);
        snapshot.cumulative_counts.push_back(running);
    }
    // The count is the +Inf bucket, so the two always agree even while observations land.
    snapshot.count = running;
    snapshot.sum = sum_.load(std::memory_order_relaxed);
    return snapshot;
}

std::vector<double> exponential_buckets(double start, double factor, int count) {
    std::vector<double> bounds;
    double bound = start;
    for (int i = 0; i < count; ++i, bound *= factor) bounds.push_back(bound);
    return bounds;
}

std::vector<double> linear_buckets(double start, double width, int count) {
    std::vector<double> bounds;
    for (int i = 0; i < count; ++i) bounds.push_back(start + width * i);
    return bounds;
}

// ---- families ----

template <class Metric>
Metric& Family<Metric>::with(const std::vector<std::string>& label_values) {
    if (label_values.size() != label_names_.size()) {
        throw std::invalid_argument("metric " + name_ + ": expected " + std::to_string(label_names_.size()) +
                                    " label values, got " + std::to_string(label_values.size()));
    }
    std::lock_guard lock(mutex_);
    auto& child = children_[label_values];
    if (!child) child = make_();
    return *child;
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

// ---- names and text ----

bool is_valid_metric_name(std::string_view name) {
    if (name.empty()) return false;
    for (size_t i = 0; i < name.size(); ++i) {
        const char c = name[i];
        const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
        if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
    }
    return true;
}

bool is_valid_label_name(std::string_view name) {
    if (name.empty() || name.substr(0, 2) == "__") return false;
    for (size_t i = 0; i < name.size(); ++i) {
        const char c = name[i];
        const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
    }
    return true;
}

std::string escape_label_value(std::string_view value) {
    std::string out;
    out.reserve(value.size());
    for (const char c : value) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '"')
            out += "\\\"";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

std::string escape_help(std::string_view help) {
    std::string out;
    out.reserve(help.size());
    for (const char c : help) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

std::string format_value(double value) {
    if (std::isnan(value)) return "NaN";
    if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
    char buffer[64];
    const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
    return std::string(buffer, result.ptr);
}

namespace {

// {a="x",b="y"} with an optional extra pair appended (le for buckets); "" when there are no labels.
std::string label_set(const std::vector<std::string>& names, const std::vector<std::string>& values,
                      std::string_view extra_name = {}, std::string_view extra_value = {}) {
    if (names.empty() && extra_name.empty()) return "";
    std::string out = "{";
    for (size_t i = 0; i < names.size(); ++i) {
        if (i > 0) out += ',';
        out += names[i] + "=\"" + escape_label_value(values[i]) + "\"";
    }
    if (!extra_name.empty()) {
        if (!names.empty()) out += ',';
        out += std::string(extra_name) + "=\"" + std::string(extra_value) + "\"";
    }
    return out + "}";
}

std::string_view type_name(MetricType type) {
    switch (type) {
        case MetricType::Counter: return "counter";
        case MetricType::Gauge: return "gauge";
        case MetricType::Histogram: return "histogram";
    }
    return "untyped";
}

}  // namespace

// ---- registry ----

struct Registry::Entry {
    std::string name;
    std::string help;
    MetricType type;
    std::vector<std::string> label_names;
    std::vector<double> upper_bounds;
    std::unique_ptr<CounterFamily> counters;
    std::unique_ptr<GaugeFamily> gauges;
    std::unique_ptr<HistogramFamily> histograms;
};

Registry::Registry() = default;
Registry::~Registry() = default;

Registry::Entry& Registry::add(const std::string& name, const std::string& help, MetricType type,
                               const std::vector<std::string>& label_names, const std::vector<double>& upper_bounds) {
    if (!is_valid_metric_name(name)) throw std::invalid_argument("invalid metric name: " + name);
    for (const std::string& label : label_names) {
        if (!is_valid_label_name(label) || (type == MetricType::Histogram && label == "le")) {
            throw std::invalid_argument("metric " + name + ": invalid label name: " + label);
        }
    }
    for (const auto& entry : entries_) {
        if (entry->name != name) continue;
        if (entry->type != type || entry->label_names != label_names || entry->upper_bounds != upper_bounds) {
            throw std::invalid_argument("metric " + name + " is already registered differently");
        }
        return *entry;
    }
    auto entry = std::make_unique<Entry>();
    entry->name = name;
    entry->help = help;
    entry->type = type;
    entry->label_names = label_names;
    entry->upper_bounds = upper_bounds;
    switch (type) {
        case MetricType::Counter:
            entry->counters.reset(
                new CounterFamily(name, help, label_names, [] { return std::make_unique<Counter>(); }));
            if (label_names.empty()) entry->counters->get();
            break;
        case MetricType::Gauge:
            entry->gauges.reset(new GaugeFamily(name, help, label_names, [] { return std::make_unique<Gauge>(); }));
            if (label_names.empty()) entry->gauges->get();
            break;
        case MetricType::Histogram:
            Histogram check(upper_bounds);  // throws on bad buckets, before anything is registered
            entry->histograms.reset(new HistogramFamily(
                name, help, label_names, [upper_bounds] { return std::make_unique<Histogram>(upper_bounds); }));
            if (label_names.empty()) entry->histograms->get();
            break;
    }
    entries_.push_back(std::move(entry));
    return *entries_.back();
}

CounterFamily& Registry::counter(const std::string& name, const std::string& help,
                                 std::vector<std::string> label_names) {
    std::lock_guard lock(mutex_);
    return *add(name, help, MetricType::Counter, label_names, {}).counters;
}

GaugeFamily& Registry::gauge(const std::string& name, const std::string& help, std::vector<std::string> label_names) {
    std::lock_guard lock(mutex_);
    return *add(name, help, MetricType::Gauge, label_names, {}).gauges;
}

HistogramFamily& Registry::histogram(const std::string& name, const std::string& help, std::vector<double> upper_bounds,
                                     std::vector<std::string> label_names) {
    std::lock_guard lock(mutex_);
    return *add(name, help, MetricType::Histogram, label_names, upper_bounds).histograms;
}

void Registry::on_collect(std::function<void()> hook) {
    std::lock_guard lock(mutex_);
    collect_hooks_.push_back(std::move(hook));
}

std::string Registry::render() const {
    std::vector<std::function<void()>> hooks;
    {
        std::lock_guard lock(mutex_);
        hooks = collect_hooks_;
    }
    for (const auto& hook : hooks) hook();  // outside the lock: hooks may register or update metrics

    std::lock_guard lock(mutex_);
    std::string out;
    for (const auto& entry : entries_) {
        out += "# HELP " + entry->name + " " + escape_help(entry->help) + "\n";
        out += "# TYPE " + entry->name + " " + std::string(type_name(entry->type)) + "\n";
        const auto sample = [&](const std::string& name, const std::string& labels, double value) {
            out += name + labels + " " + format_value(value) + "\n";
        };
        switch (entry->type) {
            case MetricType::Counter: {
                std::lock_guard family_lock(entry->counters->mutex_);
                for (const auto& [values, counter] : entry->counters->children_) {
                    sample(entry->name, label_set(entry->label_names, values), counter->value());
                }
                break;
            }
            case MetricType::Gauge: {
                std::lock_guard family_lock(entry->gauges->mutex_);
                for (const auto& [values, gauge] : entry->gauges->children_) {
                    sample(entry->name, label_set(entry->label_names, values), gauge->value());
                }
                break;
            }
            case MetricType::Histogram: {
                std::lock_guard family_lock(entry->histograms->mutex_);
                for (const auto& [values, histogram] : entry->histograms->children_) {
                    const Histogram::Snapshot snapshot = histogram->snapshot();
                    for (size_t i = 0; i < snapshot.cumulative_counts.size(); ++i) {
                        const std::string le =
                            i < snapshot.upper_bounds.size() ? format_value(snapshot.upper_bounds[i]) : "+Inf";
                        sample(entry->name + "_bucket", label_set(entry->label_names, values, "le", le),
                               static_cast<double>(snapshot.cumulative_counts[i]));
                    }
                    const std::string labels = label_set(entry->label_names, values);
                    sample(entry->name + "_sum", labels, snapshot.sum);
                    sample(entry->name + "_count", labels, static_cast<double>(snapshot.count));
                }
                break;
            }
        }
    }
    return out;
}

}  // namespace tempered::metrics
