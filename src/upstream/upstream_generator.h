// Upstream mode's generator (engine/generator.h): each generation is a streamed /v1/completions request
// to another OpenAI-compatible engine (SGLang, vLLM, llama-server, or another tempered), with the prompt
// the front rendered as token ids and every sampling value explicit (completion_body.h). The tokens that
// come back go through each choice's output stages on the front (upstream_choice.h), so the services,
// response builders, metrics and edge above see the same events as from our own engine.
//
// Each request runs on a thread of its own while it streams; a reader that goes away (client disconnect)
// or choices that all ended here (stop string, the guard's stop) end the upstream request at once, by
// closing its connection. A choice whose reasoning the front ended by force (the budget, max_tokens, a loop)
// then draws its content in a continuation request of its own (upstream_choice.h). What needs the draw is
// refused at submit (SubmitResult::unsupported) rather than silently dropped: the guard's resample, a
// grammar other than the checked tool calls' (response_format), logprobs.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "engine/engine_observer.h"
#include "engine/generator.h"
#include "tokenizer/tokenizer.h"
#include "upstream/upstream_kind.h"
#include "upstream/upstream_metrics.h"

namespace httplib {
class Result;
}

namespace tempered::upstream {

struct UpstreamSettings {
    std::string url;      // base URL: scheme://host[:port][/prefix], with or without a trailing /v1
    std::string api_key;  // sent as a bearer token; "" for none
    std::string model;    // the name sent upstream
    UpstreamKind kind = UpstreamKind::Tempered;  // what it takes (upstream_kind.h)
    std::chrono::seconds timeout{600};           // connecting, and the longest wait for the next bytes
    int max_running = 256;                       // requests streaming at once; past it submit() refuses (QueueFull)
};

// The base URL split for the HTTP client; an error names what is wrong with it.
struct UpstreamAddress {
    std::string scheme_host_port;  // "http://127.0.0.1:8000"
    std::string path_prefix;       // "" or "/prefix", without /v1
    std::string ca_file;           // https: the CA bundle its certificate is checked against; "": the system's
};
Result<UpstreamAddress> parse_upstream_url(const std::string& url);

class UpstreamGenerator final : public Generator {
public:
    // `tokenizer` (the served model's), `observer` and `metrics` (either may be null) outlive the generator.
    UpstreamGenerator(UpstreamSettings settings, UpstreamAddress address, const Tokenizer& tokenizer,
                      EngineObserver* observer, UpstreamMetrics* metrics = nullptr);
    ~UpstreamGenerator() override;  // ends every upstream request and waits for their threads

    SubmitResult submit(GenerationOptions options) override;
    EngineStats stats() const override;
    void begin_drain() override { draining_ = true; }
    bool idle() const override { return running_ == 0; }
    // The upstream's cache is the upstream's: nothing to flush here.
    std::optional<CacheFlush> flush_cache(std::chrono::milliseconds) override { return CacheFlush{}; }
    // Asks the upstream's /v1/models, at most once a second (a keyless /ready must not flood it).
    std::optional<std::string> not_ready() const override;
    std::vector<std::string> unapplied(const GenerationOptions& options) const override {
        return unapplied_sampling(options, capabilities_);
    }

private:
    struct Job;
    // How an upstream request ended; a failure's message and the HTTP status it answers with.
    struct Ending {
        UpstreamOutcome outcome;
        std::optional<std::string> error = std::nullopt;
        int status = 500;
    };
    void run(std::shared_ptr<Job> job);
    Ending send_leg(Job& job, const GenerationOptions& leg, bool with_grammar);
    bool receive(Job& job, std::string_view data);
    Ending outcome_of(const Job& job, const httplib::Result& result) const;
    void finish(Job& job, const Ending& ending);

    const UpstreamSettings settings_;
    const UpstreamAddress address_;
    const UpstreamCapabilities capabilities_;
    const Tokenizer& tokenizer_;
    EngineObserver* observer_;
    UpstreamMetrics* metrics_;
    std::mutex observer_mutex_;  // the observer expects one thread (the engine's); here there are many
    std::atomic<bool> draining_{false};
    std::atomic<bool> shutting_down_{false};
    std::atomic<int> running_{0};
    std::mutex mutex_;
    std::condition_variable all_done_;
    mutable std::mutex ready_mutex_;
    mutable std::chrono::steady_clock::time_point ready_checked_{};
    mutable std::optional<std::string> not_ready_;
};

}  // namespace tempered::upstream
