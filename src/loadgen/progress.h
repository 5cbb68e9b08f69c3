// A live progress line on stderr while a phase runs, when stderr is a terminal:
//   [#######.............] 37/64 requests  3 errors  412.3 tok/s
// redrawn in place five times a second. Redirected to a file or a CI log it draws nothing: a log
// should hold the summary, not hundreds of carriage returns.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "loadgen/request_record.h"

namespace tempered::loadgen {

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

}  // namespace tempered::loadgen
