#include "loadgen/stats.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace tempered::loadgen {
namespace {

TokenCounts count_tokens(const std::vector<int64_t>& counts) {
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
    if (!prompt_tokens.empty()) summary.prompt_tokens = count_tokens(prompt_tokens);
    summary.output_tokens = count_tokens(output_tokens);
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

}  // namespace tempered::loadgen
