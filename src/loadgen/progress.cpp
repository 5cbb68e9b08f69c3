#include "loadgen/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace tempered::loadgen {
namespace {

constexpr auto kRedrawInterval = std::chrono::milliseconds(200);

}  // namespace

std::string progress_line(int64_t finished, int64_t total, int64_t failed, double tokens_per_s, std::string_view noun,
                          int bar_width) {
    const int64_t filled = total > 0 ? std::min<int64_t>(bar_width, finished * bar_width / total) : bar_width;
    std::string line = "[";
    line.append(static_cast<size_t>(filled), '#');
    line.append(static_cast<size_t>(bar_width - filled), '.');
    char counts[160];
    std::snprintf(counts, sizeof counts, "] %lld/%lld %.*s  %lld errors  %.1f tok/s", static_cast<long long>(finished),
                  static_cast<long long>(total), static_cast<int>(noun.size()), noun.data(),
                  static_cast<long long>(failed), tokens_per_s);
    return line + counts;
}

bool stderr_is_terminal() { return isatty(STDERR_FILENO) == 1; }

ProgressBar::ProgressBar(const ProgressCounters& counters, int64_t total, std::string noun, bool enabled)
    : counters_(counters), total_(total), noun_(std::move(noun)), enabled_(enabled), start_(Clock::now()) {
    if (enabled_) thread_ = std::thread([this] { loop(); });
}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::finish() {
    if (!thread_.joinable()) return;
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
    draw();
    std::fputc('\n', stderr);
}

void ProgressBar::draw() const {
    const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    const double rate = elapsed > 0 ? static_cast<double>(counters_.output_tokens.load()) / elapsed : 0.0;
    const std::string line = progress_line(counters_.finished.load(), total_, counters_.failed.load(), rate, noun_);
    std::fprintf(stderr, "\r%s\x1b[K", line.c_str());  // ESC[K clears what a longer line left behind
    std::fflush(stderr);
}

void ProgressBar::loop() {
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, kRedrawInterval, [this] { return stopping_; })) draw();
}

}  // namespace tempered::loadgen
