// What a benchmark reports: from the request records to the summary numbers (throughput, latency
// percentiles, errors), and that summary for people (an aligned table) and for programs (one JSON
// object). Absent measurements (TTFT of non-streamed requests, prompt tokens of a server without
// usage) are "-" in the table and null in JSON, never zero. JSON keys keep the table's order.
//
// Percentiles use linear interpolation between the closest ranks, numpy's default (method="linear"):
// for n sorted values v[0..n-1] and q in [0, 100], the rank is h = (n - 1) * q / 100 and the result is
// v[floor(h)] + (h - floor(h)) * (v[floor(h) + 1] - v[floor(h)]). One value is every percentile of
// itself; there is no percentile of nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "loadgen/request.h"

namespace tempered::loadgen {

// ---- the numbers -------------------------------------------------------------------------------

double percentile_of_sorted(std::span<const double> sorted, double q);
std::optional<double> percentile(std::vector<double> values, double q);

struct Distribution {
    size_t count = 0;
    double mean = 0, p50 = 0, p90 = 0, p99 = 0, min = 0, max = 0;
};
std::optional<Distribution> describe(std::vector<double> values);

struct TokenCounts {
    int64_t total = 0;
    int64_t min = 0, max = 0;
    double mean = 0;
};

struct BenchSummary {
    double duration_s = 0;  // the measured phase, from its first request sent to its last one done
    int64_t completed = 0;
    int64_t failed = 0;
    double request_throughput = 0;       // completed / duration
    double output_token_throughput = 0;  // output tokens of completed requests / duration
    double total_token_throughput = 0;   // (prompt + output tokens of completed requests) / duration

    // Over completed requests. Prompt tokens are absent when the server reported no usage.
    std::optional<TokenCounts> prompt_tokens;
    TokenCounts output_tokens;

    // Milliseconds, over completed requests. TTFT, ITL and TPOT exist only for streamed requests: a
    // non-streamed response arrives whole, and its first token cannot be timed.
    std::optional<Distribution> ttft_ms;
    std::optional<Distribution> itl_ms;   // every gap between text chunks of every request, pooled
    std::optional<Distribution> tpot_ms;  // per request: (e2e - ttft) / (output tokens - 1), when > 1 token
    std::optional<Distribution> e2e_ms;

    std::vector<std::pair<std::string, int64_t>> errors;  // message and count, most frequent first
};

BenchSummary summarize(std::span<const RequestRecord> records, double duration_s);

// ---- the report --------------------------------------------------------------------------------

// What was run, echoed at the top of the report so that saved results explain themselves.
struct RunDescription {
    std::string url;  // the base URL as parsed
    std::string model;
    Endpoint endpoint = Endpoint::Completions;
    bool stream = false;
    std::optional<double> temperature;  // sent with every request; absent: not sent
    int concurrency = 1;
    int64_t requests = 0;
    int64_t warmup = 0;
    int64_t max_tokens = 0;
    std::optional<int64_t> prompt_tokens_target;  // --prompt-tokens; absent with --prompts-file
    std::string prompt_source;                    // how prompts were made, e.g. "synthetic, sized by /tokenize"
    std::optional<uint64_t> seed;                 // of synthetic prompts
};

nlohmann::ordered_json report_json(const RunDescription& run, const BenchSummary& summary);
std::string report_table(const RunDescription& run, const BenchSummary& summary);

}  // namespace tempered::loadgen
