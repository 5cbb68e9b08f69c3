// One `tempered bench` run, from options to summary: check the server answers, pick the model, make
// the prompts (sized by the server's /tokenize where it has one), run the warm-up requests, then the
// measured ones, and summarize those. No printing here but the progress line and the notes the caller
// chooses to show; the caller formats the result.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "core/result.h"
#include "loadgen/report.h"
#include "loadgen/request_body.h"
#include "loadgen/stats.h"

namespace tempered::loadgen {

struct BenchOptions {
    std::string url = "http://127.0.0.1:8000";
    std::string model;  // "" asks GET /v1/models and takes the first id
    std::string api_key;  // "" sends no Authorization header
    Endpoint endpoint = Endpoint::Completions;
    int concurrency = 1;
    int64_t requests = 4;
    int64_t warmup = 0;
    int64_t prompt_tokens = 128;
    std::string prompts_file;  // "" makes synthetic prompts of prompt_tokens tokens
    int64_t max_tokens = 128;
    bool stream = false;
    double timeout_s = 600;
    std::optional<uint64_t> seed;  // of the synthetic prompts; absent: a random one (reported)
    bool show_progress = false;  // the live line on stderr (the caller checks that stderr is a terminal)
};

struct BenchOutcome {
    RunDescription run;
    BenchSummary summary;
};

// Fails (with a message for the user) when the server cannot be reached, names no model, or the
// prompts cannot be made. Failed requests do not fail the run: they are counted in the summary.
// `note` receives remarks worth a line on stderr (how prompts were sized, when not exactly).
Result<BenchOutcome> run_bench(const BenchOptions& options, const std::function<void(const std::string&)>& note);

}  // namespace tempered::loadgen
