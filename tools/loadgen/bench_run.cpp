#include "loadgen/bench_run.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <random>

#include "loadgen/prompts.h"

namespace tempered::loadgen {

// ---- progress ----------------------------------------------------------------------------------

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

// ---- one phase ---------------------------------------------------------------------------------

PhaseResult run_phase(const BaseUrl& url, const RequestSettings& settings, std::span<const std::string> prompts,
                      int concurrency, std::chrono::duration<double> timeout, ProgressCounters* counters) {
    PhaseResult result;
    result.records.resize(prompts.size());
    if (prompts.empty()) return result;
    std::atomic<size_t> next{0};
    auto worker = [&] {
        HttpSession session(url, timeout);
        for (size_t i = next++; i < prompts.size(); i = next++) {
            RequestRecord record =
                run_request(session, settings, prompts[i], timeout, counters ? &counters->output_tokens : nullptr);
            if (counters) {
                // The text chunks were counted as they came; usage has the exact count.
                const auto counted = static_cast<int64_t>(record.content_times_s.size());
                if (record.ok)
                    counters->output_tokens += record.output_tokens() - counted;
                else
                    ++counters->failed;
                ++counters->finished;
            }
            result.records[i] = std::move(record);  // each index is written by one worker only
        }
    };
    const size_t workers = std::min(prompts.size(), static_cast<size_t>(std::max(1, concurrency)));
    std::vector<std::thread> threads;
    threads.reserve(workers);
    for (size_t w = 0; w < workers; ++w) threads.emplace_back(worker);
    for (auto& thread : threads) thread.join();

    auto first = result.records.front().start, last = result.records.front().end;
    for (const auto& record : result.records) {
        first = std::min(first, record.start);
        last = std::max(last, record.end);
    }
    result.duration_s = std::chrono::duration<double>(last - first).count();
    return result;
}

// ---- the run -----------------------------------------------------------------------------------

namespace {

using Seconds = std::chrono::duration<double>;

PhaseResult run_with_progress(const BaseUrl& url, const RequestSettings& settings, std::span<const std::string> prompts,
                              const BenchOptions& options, const char* noun) {
    ProgressCounters counters;
    ProgressBar bar(counters, static_cast<int64_t>(prompts.size()), noun, options.show_progress);
    PhaseResult result = run_phase(url, settings, prompts, options.concurrency, Seconds(options.timeout_s), &counters);
    bar.finish();
    return result;
}

}  // namespace

Result<BenchOutcome> run_bench(const BenchOptions& options, const std::function<void(const std::string&)>& note) {
    auto url = parse_base_url(options.url);
    if (!url) return url.error();
    url->api_key = options.api_key;
    const size_t count = static_cast<size_t>(options.warmup + options.requests);
    const bool synthetic = options.prompts_file.empty();
    std::optional<PromptSet> from_file;  // read first: a local mistake is reported before any network one
    if (!synthetic) {
        auto prompts = file_prompt_set(options.prompts_file, count);
        if (!prompts) return prompts.error();
        from_file = std::move(*prompts);
    }
    HttpSession probe(*url, Seconds(options.timeout_s));

    // Reachability first, so that a wrong --url fails now with one clear message.
    auto models = probe.get("/v1/models");
    if (!models) return Error{"cannot reach the server at " + url->to_string() + ": " + models.error().message};
    RequestSettings settings{options.endpoint, options.model, options.max_tokens, options.stream, options.temperature};
    if (settings.model.empty()) {
        auto ids = model_ids(*models);
        if (!ids) return Error{"no --model given, and " + ids.error().message};
        if (ids->empty()) return Error{"no --model given, and GET /v1/models lists no model"};
        settings.model = ids->front();
    }

    // A fresh seed by default: the same prompts again would find their prefixes in the server's cache
    // from the previous run and measure less work than real traffic.
    const uint64_t seed =
        options.seed ? *options.seed : (uint64_t{std::random_device{}()} << 32 | std::random_device{}());
    auto prompts =
        synthetic ? synthetic_prompt_set(
                        probe, settings,
                        {count, options.prompt_tokens, seed, options.concurrency, Seconds(options.timeout_s)}, note)
                  : Result<PromptSet>(std::move(*from_file));
    if (!prompts) return prompts.error();

    const std::span<const std::string> all(prompts->texts);
    const size_t warmup = static_cast<size_t>(options.warmup);
    if (warmup > 0) run_with_progress(*url, settings, all.first(warmup), options, "warm-up requests");
    const PhaseResult measured = run_with_progress(*url, settings, all.subspan(warmup), options, "requests");

    BenchOutcome outcome;
    outcome.run = {url->to_string(),    settings.model,
                   options.endpoint,    options.stream,
                   options.temperature, options.concurrency,
                   options.requests,    options.warmup,
                   options.max_tokens,  synthetic ? std::optional<int64_t>(options.prompt_tokens) : std::nullopt,
                   prompts->source,     synthetic ? std::optional<uint64_t>(seed) : std::nullopt};
    outcome.summary = summarize(measured.records, measured.duration_s);
    return outcome;
}

}  // namespace tempered::loadgen
