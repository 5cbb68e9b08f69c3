// A benchmark's summary for people (an aligned table) and for programs (one JSON object). Absent
// measurements (TTFT of non-streamed requests, prompt tokens of a server without usage) are "-" in the
// table and null in JSON, never zero. JSON keys keep the table's order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "loadgen/request_body.h"
#include "loadgen/stats.h"

namespace tempered::loadgen {

// What was run, echoed at the top of the report so that saved results explain themselves.
struct RunDescription {
    std::string url;  // the base URL as parsed
    std::string model;
    Endpoint endpoint = Endpoint::Completions;
    bool stream = false;
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
