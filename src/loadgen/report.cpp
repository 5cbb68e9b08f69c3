#include "loadgen/report.h"

#include <cstdarg>
#include <cstdio>

namespace tempered::loadgen {
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
        {"concurrency", run.concurrency},
        {"requests", run.requests},
        {"warmup", run.warmup},
        {"max_tokens", run.max_tokens},
        {"prompt_tokens_target", run.prompt_tokens_target ? nlohmann::ordered_json(*run.prompt_tokens_target) : nullptr},
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
            out += format("  ... and %zu other messages (--json lists them all)\n", summary.errors.size() - kTableErrorKinds);
    }
    out += "========================================\n";
    return out;
}

}  // namespace tempered::loadgen
