// One `tempered bench` run, from options to summary: check the server answers, pick the model, make
// the prompts, run the warm-up requests, then the measured ones, and summarize those. No printing here
// but the progress line and the notes the caller chooses to show; the caller formats the result.
//
// Each phase is closed-loop load: `concurrency` workers, each with its own keep-alive connection,
// take the next request index from a shared counter and send it, until every prompt has been sent
// once. So at most `concurrency` requests are in flight, and a new one starts as soon as one finishes.
//
// While a phase runs, a live progress line on stderr when stderr is a terminal:
//   [#######.............] 37/64 requests  3 errors  412.3 tok/s
// redrawn in place five times a second. Redirected to a file or a CI log it draws nothing: a log
// should hold the summary, not hundreds of carriage returns.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/result.h"
#include "loadgen/report.h"
#include "loadgen/request.h"
#include "loadgen/server.h"

namespace tempered::loadgen {

// ---- progress ----------------------------------------------------------------------------------

// Updated by the workers as requests finish.
struct ProgressCounters {
    std::atomic<int64_t> finished{0};
    std::atomic<int64_t> failed{0};
    std::atomic<int64_t> output_tokens{0};  // streamed: counted as text chunks arrive; else when a request ends
};

// The line itself (no carriage return), `bar_width` cells of bar.
std::string progress_line(int64_t finished, int64_t total, int64_t failed, double tokens_per_s, std::string_view noun,
                          int bar_width = 20);

bool stderr_is_terminal();

class ProgressBar {
public:
    // Draws only when `enabled` (pass stderr_is_terminal()). `noun` names the phase: "requests", "warmup".
    ProgressBar(const ProgressCounters& counters, int64_t total, std::string noun, bool enabled);
    ~ProgressBar();  // finish()
    ProgressBar(const ProgressBar&) = delete;
    ProgressBar& operator=(const ProgressBar&) = delete;

    // Draws the final state and ends the line. Idempotent.
    void finish();

private:
    void draw() const;
    void loop();

    const ProgressCounters& counters_;
    int64_t total_;
    std::string noun_;
    bool enabled_;
    Clock::time_point start_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;
    std::thread thread_;
};

// ---- one phase ---------------------------------------------------------------------------------

struct PhaseResult {
    std::vector<RequestRecord> records;  // in request order: records[i] is prompts[i]'s request
    double duration_s = 0;               // from the first request sent to the last one finished
};

// Request i sends prompts[i]. `counters` (may be null) follow the requests as they finish.
PhaseResult run_phase(const BaseUrl& url, const RequestSettings& settings, std::span<const std::string> prompts,
                      int concurrency, std::chrono::duration<double> timeout, ProgressCounters* counters);

// ---- the run -----------------------------------------------------------------------------------

struct BenchOptions {
    std::string url = "http://127.0.0.1:8000";
    std::string model;    // "" asks GET /v1/models and takes the first id
    std::string api_key;  // "" sends no Authorization header
    Endpoint endpoint = Endpoint::Completions;
    int concurrency = 1;
    int64_t requests = 4;
    int64_t warmup = 0;
    int64_t prompt_tokens = 128;
    std::string prompts_file;  // "" makes synthetic prompts of prompt_tokens tokens
    int64_t max_tokens = 128;
    bool stream = false;
    std::optional<double> temperature;  // absent: not sent
    double timeout_s = 600;
    std::optional<uint64_t> seed;  // of the synthetic prompts; absent: a random one (reported)
    bool show_progress = false;    // the live line on stderr (the caller checks that stderr is a terminal)
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
