#include "loadgen/bench_run.h"

#include <random>

#include "loadgen/base_url.h"
#include "loadgen/http_session.h"
#include "loadgen/load_driver.h"
#include "loadgen/prompt_set.h"
#include "loadgen/server_probe.h"

namespace tempered::loadgen {
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
    RequestSettings settings{options.endpoint, options.model, options.max_tokens, options.stream};
    if (settings.model.empty()) {
        auto ids = model_ids(*models);
        if (!ids) return Error{"no --model given, and " + ids.error().message};
        if (ids->empty()) return Error{"no --model given, and GET /v1/models lists no model"};
        settings.model = ids->front();
    }

    // A fresh seed by default: the same prompts again would find their prefixes in the server's cache
    // from the previous run and measure less work than real traffic.
    const uint64_t seed = options.seed ? *options.seed : (uint64_t{std::random_device{}()} << 32 | std::random_device{}());
    auto prompts = synthetic ? synthetic_prompt_set(probe, settings,
                                                    {count, options.prompt_tokens, seed, options.concurrency,
                                                     Seconds(options.timeout_s)},
                                                    note)
                             : Result<PromptSet>(std::move(*from_file));
    if (!prompts) return prompts.error();

    const std::span<const std::string> all(prompts->texts);
    const size_t warmup = static_cast<size_t>(options.warmup);
    if (warmup > 0) run_with_progress(*url, settings, all.first(warmup), options, "warm-up requests");
    const PhaseResult measured = run_with_progress(*url, settings, all.subspan(warmup), options, "requests");

    BenchOutcome outcome;
    outcome.run = {url->to_string(), settings.model, options.endpoint, options.stream, options.concurrency,
                   options.requests, options.warmup, options.max_tokens,
                   synthetic ? std::optional<int64_t>(options.prompt_tokens) : std::nullopt,
                   prompts->source,
                   synthetic ? std::optional<uint64_t>(seed) : std::nullopt};
    outcome.summary = summarize(measured.records, measured.duration_s);
    return outcome;
}

}  // namespace tempered::loadgen
