#include "loadgen/report.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <map>
#include <numeric>

namespace tempered::loadgen {

// ---- the numbers -------------------------------------------------------------------------------

namespace {

TokenCounts token_counts(const std::vector<int64_t>& counts) {
    TokenCounts out;
    if (counts.empty()) return out;
    out.total = std::accumulate(counts.begin(), counts.end(), int64_t{0});
    const auto [min, max] = std::minmax_element(counts.begin(), counts.end());
    out.min = *min;
    out.max = *max;
    out.mean = static_cast<double>(out.total) / static_cast<double>(counts.size());
    return out;
}

double per_second(double amount, double duration_s) { return duration_s > 0 ? amount / duration_s : 0; }

}  // namespace

double percentile_of_sorted(std::span<const double> sorted, double q) {
    const double rank = static_cast<double>(sorted.size() - 1) * std::clamp(q, 0.0, 100.0) / 100.0;
    const size_t below = static_cast<size_t>(std::floor(rank));
    if (below + 1 >= sorted.size()) return sorted[below];
    return sorted[below] + (rank - static_cast<double>(below)) * (sorted[below + 1] - sorted[below]);
}

std::optional<double> percentile(std::vector<double> values, double q) {
    if (values.empty()) return std::nullopt;
    std::sort(values.begin(), values.end());
    return percentile_of_sorted(values, q);
}

std::optional<Distribution> describe(std::vector<double> values) {
    if (values.empty()) return std::nullopt;
    std::sort(values.begin(), values.end());
    Distribution out;
    out.count = values.size();
    out.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
    out.p50 = percentile_of_sorted(values, 50);
    out.p90 = percentile_of_sorted(values, 90);
    out.p99 = percentile_of_sorted(values, 99);
    out.min = values.front();
    out.max = values.back();
    return out;
}

BenchSummary summarize(std::span<const RequestRecord> records, double duration_s) {
    BenchSummary summary;
    summary.duration_s = duration_s;
    std::vector<int64_t> prompt_tokens, output_tokens;
    std::vector<double> ttft, itl, tpot, e2e;
    std::map<std::string, int64_t> errors;
    for (const RequestRecord& record : records) {
        if (!record.ok) {
            ++summary.failed;
            ++errors[record.error];
            continue;
        }
        ++summary.completed;
        if (record.prompt_tokens) prompt_tokens.push_back(*record.prompt_tokens);
        const int64_t tokens = record.output_tokens();
        output_tokens.push_back(tokens);
        const double e2e_s = record.e2e_s();
        e2e.push_back(e2e_s * 1e3);
        if (const auto ttft_s = record.ttft_s()) {
            ttft.push_back(*ttft_s * 1e3);
            if (tokens > 1) tpot.push_back((e2e_s - *ttft_s) * 1e3 / static_cast<double>(tokens - 1));
        }
        for (size_t i = 1; i < record.content_times_s.size(); ++i)
            itl.push_back((record.content_times_s[i] - record.content_times_s[i - 1]) * 1e3);
    }
    if (!prompt_tokens.empty()) summary.prompt_tokens = token_counts(prompt_tokens);
    summary.output_tokens = token_counts(output_tokens);
    const double prompt_total = summary.prompt_tokens ? static_cast<double>(summary.prompt_tokens->total) : 0.0;
    const double output_total = static_cast<double>(summary.output_tokens.total);
    summary.request_throughput = per_second(static_cast<double>(summary.completed), duration_s);
    summary.output_token_throughput = per_second(output_total, duration_s);
    summary.total_token_throughput = per_second(prompt_total + output_total, duration_s);
    summary.ttft_ms = describe(std::move(ttft));
    summary.itl_ms = describe(std::move(itl));
    summary.tpot_ms = describe(std::move(tpot));
    summary.e2e_ms = describe(std::move(e2e));
    summary.errors.assign(errors.begin(), errors.end());
    std::stable_sort(summary.errors.begin(), summary.errors.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    return summary;
}

// ---- the report --------------------------------------------------------------------------------

namespace {

constexpr size_t kTableErrorKinds = 5;  // the table lists this many error messages; JSON lists all

nlohmann::ordered_json distribution_json(const std::optional<Distribution>& d) {
    if (!d) return nullptr;
    return {{"count", d->count}, {"mean", d->mean}, {"p50", d->p50}, {"p90", d->p90},
            {"p99", d->p99},     {"min", d->min},   {"max", d->max}};
}

nlohmann::ordered_json tokens_json(const TokenCounts& t) {
    return {{"total", t.total}, {"mean", t.mean}, {"min", t.min}, {"max", t.max}};
}

std::string format(const char* pattern, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* pattern, ...) {
    char text[512];
    va_list args;
    va_start(args, pattern);
    std::vsnprintf(text, sizeof text, pattern, args);
    va_end(args);
    return text;
}

std::string row(const char* label, const std::string& value) { return format("%-34s %s\n", label, value.c_str()); }

std::string latency_row(const char* label, const std::optional<Distribution>& d) {
    if (!d) return format("  %-10s %10s %10s %10s %10s\n", label, "-", "-", "-", "-");
    return format("  %-10s %10.2f %10.2f %10.2f %10.2f\n", label, d->mean, d->p50, d->p90, d->p99);
}

}  // namespace

nlohmann::ordered_json report_json(const RunDescription& run, const BenchSummary& summary) {
    nlohmann::ordered_json errors = nlohmann::ordered_json::array();
    for (const auto& [message, count] : summary.errors) errors.push_back({{"message", message}, {"count", count}});
    nlohmann::ordered_json json = {
        {"url", run.url},
        {"model", run.model},
        {"endpoint", endpoint_name(run.endpoint)},
        {"stream", run.stream},
        {"temperature", run.temperature ? nlohmann::ordered_json(*run.temperature) : nullptr},
        {"concurrency", run.concurrency},
        {"requests", run.requests},
        {"warmup", run.warmup},
        {"max_tokens", run.max_tokens},
        {"prompt_tokens_target",
         run.prompt_tokens_target ? nlohmann::ordered_json(*run.prompt_tokens_target) : nullptr},
        {"prompt_source", run.prompt_source},
        {"seed", run.seed ? nlohmann::ordered_json(*run.seed) : nullptr},
        {"duration_s", summary.duration_s},
        {"completed", summary.completed},
        {"failed", summary.failed},
        {"request_throughput", summary.request_throughput},
        {"output_token_throughput", summary.output_token_throughput},
        {"total_token_throughput", summary.total_token_throughput},
        {"prompt_tokens", summary.prompt_tokens ? tokens_json(*summary.prompt_tokens) : nullptr},
        {"output_tokens", tokens_json(summary.output_tokens)},
        {"ttft_ms", distribution_json(summary.ttft_ms)},
        {"itl_ms", distribution_json(summary.itl_ms)},
        {"tpot_ms", distribution_json(summary.tpot_ms)},
        {"e2e_latency_ms", distribution_json(summary.e2e_ms)},
        {"errors", errors},
    };
    return json;
}

std::string report_table(const RunDescription& run, const BenchSummary& summary) {
    std::string out = "============ tempered bench ============\n";
    out += row("Server:", run.url + std::string(endpoint_route(run.endpoint)) + (run.stream ? " (streamed)" : ""));
    out += row("Model:", run.model);
    out += row("Concurrency:", std::to_string(run.concurrency));
    out += row("Prompts:", run.prompt_source + (run.seed ? " (seed " + std::to_string(*run.seed) + ")" : ""));
    out += row("Max tokens:", std::to_string(run.max_tokens) + " (ignore_eos)");
    out += row("Temperature:", run.temperature ? format("%g", *run.temperature) : "not sent (server default)");
    out += "----------------------------------------\n";
    out += row("Duration (s):", format("%.2f", summary.duration_s));
    out += row("Requests completed / failed:", format("%lld / %lld", static_cast<long long>(summary.completed),
                                                      static_cast<long long>(summary.failed)));
    out += row("Request throughput (req/s):", format("%.2f", summary.request_throughput));
    out += row("Output token throughput (tok/s):", format("%.2f", summary.output_token_throughput));
    out += row("Total token throughput (tok/s):", format("%.2f", summary.total_token_throughput));
    out += row("Mean prompt tokens:", summary.prompt_tokens ? format("%.2f", summary.prompt_tokens->mean) : "-");
    out += row("Mean output tokens:", summary.completed ? format("%.2f", summary.output_tokens.mean) : "-");
    out += row("Total output tokens:", std::to_string(summary.output_tokens.total));
    out += format("%-12s %10s %10s %10s %10s\n", "Latency (ms)", "mean", "p50", "p90", "p99");
    out += latency_row("TTFT", summary.ttft_ms);
    out += latency_row("ITL", summary.itl_ms);
    out += latency_row("TPOT", summary.tpot_ms);
    out += latency_row("E2E", summary.e2e_ms);
    if (!run.stream) out += "  (TTFT, ITL and TPOT need --stream: a non-streamed response arrives whole)\n";
    if (!summary.errors.empty()) {
        out += "Errors:\n";
        for (size_t i = 0; i < summary.errors.size() && i < kTableErrorKinds; ++i)
            out += format("  %6lld x %s\n", static_cast<long long>(summary.errors[i].second),
                          summary.errors[i].first.c_str());
        if (summary.errors.size() > kTableErrorKinds)
            out += format("  ... and %zu other messages (--json lists them all)\n",
                          summary.errors.size() - kTableErrorKinds);
    }
    out += "========================================\n";
    return out;
}

}  // namespace tempered::loadgen
