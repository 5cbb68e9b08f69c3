#include "engine/engine.h"

#include <algorithm>

#include "engine/kv_transfer.h"

namespace tempered {

Engine::Engine(Model& model, const Tokenizer& tokenizer, KvBlockPool& kv, EngineOptions options,
               EngineObserver* observer)
    : model_(model),
      tokenizer_(tokenizer),
      kv_(kv),
      options_(options),
      observer_(observer),
      scheduler_(kv, SchedulerOptions{options.max_running, options.step_token_budget, options.speculative_tokens,
                                      model.config().context_length, options.max_decode_stall_seconds}),
      postprocess_(tokenizer, model.config(), kv, observer, sequence_ids_, transfer_ready()) {
    waker_->engine = this;
    publish_stats();
    thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() {
    {
        std::lock_guard lock(waker_->mutex);
        waker_->engine = nullptr;
    }
    stopping_ = true;
    wake_.notify_all();
    thread_.join();
}

SubmitResult Engine::submit(GenerationOptions options) {
    if (draining_) return {nullptr, SubmitRefusal::Draining, std::nullopt};
    auto request = std::make_unique<Request>();
    request->options = std::move(options);
    request->options.n = std::clamp(request->options.n, 1, 16);
    request->stream = std::make_shared<GenerationStream>();
    request->submitted = EngineClock::now();
    request->usage.prompt_tokens = static_cast<int64_t>(request->options.prompt.size());
    auto stream = request->stream;
    {
        std::lock_guard lock(mutex_);
        if (queued_count_ >= options_.max_queued) return {nullptr, SubmitRefusal::QueueFull, std::nullopt};
        ++queued_count_;
        incoming_.push_back(std::move(request));
    }
    wake_.notify_one();
    return {stream, std::nullopt, std::nullopt};
}

EngineStats Engine::stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
}

bool Engine::idle() const {
    std::lock_guard lock(mutex_);
    return queued_count_ == 0 && stats_.running_requests == 0 && stats_.exporting_requests == 0;
}

std::function<void()> Engine::transfer_ready() {
    return [waker = waker_] {
        std::lock_guard lock(waker->mutex);
        if (waker->engine) waker->engine->wake_for_transfer();
    };
}

// Called by a transfer's own thread, never while the engine holds mutex_.
void Engine::wake_for_transfer() {
    {
        std::lock_guard lock(mutex_);
        transfer_news_ = true;
    }
    wake_.notify_one();
}

void Engine::loop() {
    while (true) {
        {
            std::unique_lock lock(mutex_);
            const auto has_news = [&] {
                return stopping_ || !incoming_.empty() || scheduler_.has_work() || transfer_news_ ||
                       !cache_flushes_.empty();
            };
            // A request waiting on a transfer whose reader leaves must not wait for the transfer's timeout.
            if (importing_.empty() && exporting_.empty())
                wake_.wait(lock, has_news);
            else
                wake_.wait_for(lock, std::chrono::milliseconds(100), has_news);
            if (stopping_) break;
        }
        step();
    }
    shut_down();
}

void Engine::step() {
    serve_cache_flushes();  // engine_cache_flush.cpp
    take_new_requests();
    settle_kv_transfers();
    drop_cancelled();
    if (options_.draft_model)
        options_.draft_model->propose(scheduler_.drafts_wanted(options_.draft_model->seconds_per_draft()));
    const StepPlan& plan = scheduler_.schedule();
    report_plan(plan);
    if (!plan.chunks.empty()) {
        build_batch(plan);
        const auto started = EngineClock::now();
        const Status forward = model_.forward(batch_, kv_, logits_.data());
        scheduler_.observe_step(plan, std::chrono::duration<double>(EngineClock::now() - started).count());
        report_expert_traffic();
        const Postprocessor::Applied applied = postprocess_.apply(plan, forward, logits_.data());
        for (Request* request : applied.awaiting_export) exporting_.push_back(scheduler_.take_running(request));
        scheduler_.retire(applied.finished);
    }
    publish_stats();
}

void Engine::report_expert_traffic() {
    const int64_t bytes = model_.last_expert_traffic().weight_bytes;
    if (observer_ && bytes > 0) observer_->on_expert_traffic(bytes);
}

void Engine::take_new_requests() {
    std::deque<std::unique_ptr<Request>> arrived;
    {
        std::lock_guard lock(mutex_);
        arrived.swap(incoming_);
    }
    for (auto& request : arrived) {
        request->sequences.push_back(std::make_unique<Sequence>(sequence_ids_.next(), 0, request->options.prompt,
                                                                static_cast<int64_t>(request->options.prompt.size()),
                                                                request->options, tokenizer_));
        if (options_.speculative_tokens > 0 && request->options.n == 1 && request->options.speculate) {
            Sequence& sequence = *request->sequences.back();
            if (options_.draft_model) {
                sequence.drafts_from_model = true;
            } else {
                sequence.drafter.emplace(NgramOptions{.max_drafts = options_.speculative_tokens});
                sequence.drafter->append(sequence.tokens);
            }
        }
        if (request->options.kv_import) {  // decode side: the KV comes from the prefill server
            importing_.push_back(std::move(request));
        } else {
            scheduler_.add(std::move(request));
        }
    }
}

void Engine::settle_kv_transfers() {
    {
        std::lock_guard lock(mutex_);
        transfer_news_ = false;
    }
    settle_imports();
    start_imports();
    settle_exports();
}

// Decode side. An import starts (its claim goes out, asking only for what the prefix cache lacks) while
// the pool could still hold every import in flight: KV waiting in memory for admission never outgrows the
// pool, and the prefill server keeps the rest meanwhile. In arrival order; one at a time at least.
void Engine::start_imports() {
    if (importing_.empty()) return;
    int64_t promised = 0;  // in flight, or landed and waiting for admission with their KV in memory
    for (const auto& request : importing_) promised += request->import_blocks;
    for (const auto& request : scheduler_.waiting())
        if (request->imported_kv) promised += request->import_blocks;
    for (auto& request : importing_) {
        if (request->import_blocks > 0) continue;
        const auto& prompt = request->options.prompt;
        const auto positions = static_cast<int64_t>(prompt.size());
        const int64_t blocks = std::max<int64_t>(kv_.blocks_to_hold(positions, positions - 1), 1);
        if (promised > 0 && promised + blocks > kv_.available_block_count()) break;
        promised += blocks;
        request->import_blocks = blocks;
        request->options.kv_import->start(prompt, kv_.cached_prefix_positions(prompt), transfer_ready());
    }
}

// A request whose KV arrived joins the queue; one whose transfer failed ends with that error.
void Engine::settle_imports() {
    for (auto it = importing_.begin(); it != importing_.end();) {
        Request& request = **it;
        if (request.cancelled()) {
            postprocess_.abandon(request);
        } else if (auto result = request.import_blocks > 0 ? request.options.kv_import->poll() : std::nullopt) {
            if (!*result) {
                postprocess_.finish(request, "KV transfer failed: " + result->error().message);
            } else {
                request.imported_kv = std::move(result->value());
                scheduler_.add(std::move(*it));
            }
        } else {
            ++it;
            continue;
        }
        it = importing_.erase(it);
    }
}

// A prefill-side request's last event: once the decode server has its KV, or the transfer's error.
void Engine::settle_exports() {
    for (auto it = exporting_.begin(); it != exporting_.end();) {
        Request& request = **it;
        if (request.cancelled()) {
            postprocess_.abandon(request);
        } else if (auto status = request.options.kv_export->poll()) {
            std::optional<std::string> error;
            if (!*status) error = "KV transfer failed: " + status->error().message;
            postprocess_.finish(request, std::move(error));
        } else {
            ++it;
            continue;
        }
        it = exporting_.erase(it);
    }
}

void Engine::drop_cancelled() {
    for (auto& request : scheduler_.drop_cancelled()) postprocess_.abandon(*request);
}

// What the scheduler decided that others must hear of.
void Engine::report_plan(const StepPlan& plan) {
    for (Request* request : plan.admitted_first_time) {
        request->first_scheduled = EngineClock::now();
        if (observer_) observer_->on_prefix_lookup(request->usage.prompt_tokens, request->usage.cached_tokens);
    }
    if (observer_)
        for (size_t i = 0; i < plan.preempted.size(); ++i) observer_->on_preemption();
    if (observer_)
        for (int i = 0; i < plan.imported_kv_dropped; ++i) observer_->on_imported_kv_dropped();
    for (const auto& request : plan.refused) postprocess_.finish(*request, "the request does not fit in the KV cache");
}

void Engine::build_batch(const StepPlan& plan) {
    fill_batch(plan, batch_);
    logits_.resize(static_cast<size_t>(batch_.output_count() * model_.config().vocab_size));
}

// Whoever still waits gets an error rather than silence.
void Engine::shut_down() {
    take_new_requests();
    for (auto* waiting : {&importing_, &exporting_}) {
        for (auto& request : *waiting) postprocess_.finish(*request, "the server is shutting down");
        waiting->clear();
    }
    for (auto& request : scheduler_.take_all()) postprocess_.finish(*request, "the server is shutting down");
}

void Engine::publish_stats() {
    EngineStats stats;
    stats.running_requests = static_cast<int>(scheduler_.running().size());
    for (const auto& request : scheduler_.running())
        for (const auto& sequence : request->sequences)
            if (!sequence->finished) {
                ++stats.running_sequences;
                stats.tokens_in_kv += sequence->computed;
            }
    stats.kv_blocks_total = kv_.block_count();
    stats.kv_blocks_used = kv_.used_block_count();
    stats.kv_block_size = kv_.shape().block_size;
    stats.importing_requests = static_cast<int>(importing_.size());
    stats.exporting_requests = static_cast<int>(exporting_.size());
    for (const auto& request : scheduler_.waiting()) stats.waiting_prompt_tokens += request->usage.prompt_tokens;
    std::lock_guard lock(mutex_);
    for (const auto& request : incoming_) stats.waiting_prompt_tokens += request->usage.prompt_tokens;
    // Exports count too: each holds its prompt's KV in memory until the decode server takes it, so a
    // prefill server whose decode side lags answers 429 instead of growing without bound.
    queued_count_ =
        static_cast<int>(incoming_.size() + scheduler_.waiting().size() + importing_.size() + exporting_.size());
    stats.waiting_requests = queued_count_;
    stats_ = stats;
}

}  // namespace tempered
