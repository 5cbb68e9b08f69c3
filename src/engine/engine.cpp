#include "engine/engine.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/stop_matcher.h"
#include "tokenizer/streaming_detokenizer.h"

namespace tempered {

using Clock = std::chrono::steady_clock;

namespace {
double seconds_between(Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double>(to - from).count();
}
}  // namespace

// One choice of a request: its tokens (prompt + generated) and how many of them are in the KV cache.
struct Engine::Sequence {
    int32_t id = 0;
    int choice = 0;
    std::vector<int32_t> tokens;
    int64_t prompt_length = 0;
    int64_t computed = 0;  // tokens[0, computed) have keys and values in the cache
    SamplerRng rng;
    StreamingDetokenizer detokenizer;
    StopMatcher stop_matcher;
    bool finished = false;
    std::optional<FinishReason> finish_reason;
    Clock::time_point last_token_time;

    Sequence(int32_t sequence_id, int choice_index, std::vector<int32_t> all_tokens, int64_t prompt_tokens,
             uint64_t seed, const Tokenizer& tokenizer, std::vector<std::string> stop)
        : id(sequence_id),
          choice(choice_index),
          tokens(std::move(all_tokens)),
          prompt_length(prompt_tokens),
          rng(seed, static_cast<uint64_t>(choice_index) * 2 + 1),
          detokenizer(tokenizer, /*skip_special=*/true),
          stop_matcher(std::move(stop)) {}

    int64_t generated() const { return static_cast<int64_t>(tokens.size()) - prompt_length; }
    int64_t pending() const { return static_cast<int64_t>(tokens.size()) - computed; }
};

struct Engine::ActiveRequest {
    GenerationOptions options;
    std::shared_ptr<GenerationStream> stream;
    std::vector<std::unique_ptr<Sequence>> sequences;  // one until the prefill is done, then n
    bool forked = false;
    bool ever_admitted = false;
    bool running = false;  // in running_ (else waiting)
    GenerationUsage usage;
    Clock::time_point submitted;
    Clock::time_point first_scheduled;
    std::optional<Clock::time_point> first_token;
};

Engine::Engine(Model& model, const Tokenizer& tokenizer, KvBlockPool& kv, EngineOptions options,
               EngineObserver* observer)
    : model_(model), tokenizer_(tokenizer), kv_(kv), options_(options), observer_(observer) {
    for (int32_t token = 0; token < std::min<int64_t>(tokenizer.vocab_size(), model.config().vocab_size); ++token)
        if (tokenizer.is_end_of_generation(token)) end_of_generation_tokens_.push_back(token);
    publish_stats();
    thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() {
    stopping_ = true;
    wake_.notify_all();
    thread_.join();
}

SubmitResult Engine::submit(GenerationOptions options) {
    if (draining_) return {nullptr, SubmitRefusal::Draining};
    auto request = std::make_unique<ActiveRequest>();
    request->options = std::move(options);
    request->options.n = std::clamp(request->options.n, 1, 16);
    request->stream = std::make_shared<GenerationStream>();
    request->submitted = Clock::now();
    request->usage.prompt_tokens = static_cast<int64_t>(request->options.prompt.size());
    auto stream = request->stream;
    {
        std::lock_guard lock(mutex_);
        if (queued_count_ >= options_.max_queued) return {nullptr, SubmitRefusal::QueueFull};
        ++queued_count_;
        incoming_.push_back(std::move(request));
    }
    wake_.notify_one();
    return {stream, std::nullopt};
}

EngineStats Engine::stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
}

bool Engine::idle() const {
    std::lock_guard lock(mutex_);
    return queued_count_ == 0 && stats_.running_requests == 0;
}

void Engine::loop() {
    while (true) {
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return stopping_ || !incoming_.empty() || !running_.empty() || !waiting_.empty(); });
            if (stopping_) break;
        }
        step();
    }
    // Shutting down: whoever still waits gets an error rather than silence.
    take_new_requests();
    for (auto& request : running_) finish(*request, "the server is shutting down");
    for (auto& request : waiting_) finish(*request, "the server is shutting down");
}

void Engine::take_new_requests() {
    std::lock_guard lock(mutex_);
    while (!incoming_.empty()) {
        auto request = std::move(incoming_.front());
        incoming_.pop_front();
        request->sequences.push_back(std::make_unique<Sequence>(
            next_sequence_id_++, 0, request->options.prompt, static_cast<int64_t>(request->options.prompt.size()),
            request->options.seed, tokenizer_, request->options.stop));
        waiting_.push_back(std::move(request));
    }
}

void Engine::drop_cancelled() {
    auto cancelled = [](const std::unique_ptr<ActiveRequest>& request) { return request->stream->cancelled(); };
    for (auto it = running_.begin(); it != running_.end();) {
        if (!cancelled(*it)) {
            ++it;
            continue;
        }
        for (auto& sequence : (*it)->sequences) kv_.release(sequence->id);
        report_finished(**it, RequestOutcome::Abort);
        it = running_.erase(it);
    }
    for (auto& request : waiting_)
        if (cancelled(request)) report_finished(*request, RequestOutcome::Abort);
    const auto removed = std::erase_if(waiting_, cancelled);
    if (removed) {
        std::lock_guard lock(mutex_);
        queued_count_ -= static_cast<int>(removed);
    }
}

void Engine::preempt(ActiveRequest& request) {
    for (auto& sequence : request.sequences) {
        kv_.release(sequence->id);
        sequence->computed = 0;
    }
    request.running = false;
    auto it = std::find_if(running_.begin(), running_.end(), [&](const auto& r) { return r.get() == &request; });
    waiting_.push_front(std::move(*it));
    running_.erase(it);
    {
        std::lock_guard lock(mutex_);
        ++queued_count_;
    }
    if (observer_) observer_->on_preemption();
}

// Finds blocks for `sequence` up to `positions`, preempting the most recently admitted other requests.
// False if `for_request` itself had to be preempted (nothing else was left to take from).
bool Engine::make_room(ActiveRequest& for_request, Sequence& sequence, int64_t positions) {
    while (!kv_.ensure_capacity(sequence.id, positions)) {
        ActiveRequest* victim = running_.back().get();
        preempt(*victim);
        if (victim == &for_request) return false;
    }
    return true;
}

bool Engine::admit(ActiveRequest& request, int64_t& budget, std::vector<ScheduledChunk>& plan) {
    std::vector<ScheduledChunk> chunks;
    for (auto& sequence : request.sequences) {
        if (sequence->finished) continue;
        const int64_t cached = kv_.adopt_cached_prefix(sequence->id, sequence->tokens);
        sequence->computed = cached;
        const int64_t count = std::min(sequence->pending(), budget);
        // Against thrashing: while others run, admit only a request whose whole prompt fits and still
        // leaves every running sequence a block to grow into; otherwise it would be admitted, then
        // preempted for them a few steps later, its prefill wasted.
        const int64_t block_size = kv_.shape().block_size;
        const int64_t blocks_to_finish_prompt =
            (static_cast<int64_t>(sequence->tokens.size()) + block_size - 1) / block_size -
            static_cast<int64_t>(kv_.block_table(sequence->id).size());
        const bool crowded = !running_.empty() &&
                             kv_.available_block_count() - blocks_to_finish_prompt < running_sequence_count();
        if (count <= 0 || crowded || !kv_.ensure_capacity(sequence->id, sequence->computed + count)) {
            for (auto& s : request.sequences) {
                kv_.release(s->id);
                s->computed = 0;
            }
            return false;
        }
        budget -= count;
        chunks.push_back({&request, sequence.get(), count});
    }
    if (!request.ever_admitted) {
        // Counted once, when the request is first admitted, however often it was turned away before.
        const Sequence& first = *request.sequences.front();
        request.first_scheduled = Clock::now();
        request.usage.cached_tokens = first.computed;
        if (observer_) observer_->on_prefix_lookup(static_cast<int64_t>(first.tokens.size()), first.computed);
    }
    request.ever_admitted = true;
    plan.insert(plan.end(), chunks.begin(), chunks.end());
    return true;
}

int64_t Engine::running_sequence_count() const {
    int64_t count = 0;
    for (const auto& request : running_)
        for (const auto& sequence : request->sequences) count += sequence->finished ? 0 : 1;
    return count;
}

std::vector<Engine::ScheduledChunk> Engine::schedule() {
    std::vector<ScheduledChunk> plan;
    int64_t budget = options_.step_token_budget;
    // Running requests first, oldest first: they hold KV already. Making room may preempt the newest
    // ones, so walk a snapshot and skip those that left running_ meanwhile.
    std::vector<ActiveRequest*> order;
    for (const auto& request : running_) order.push_back(request.get());
    for (ActiveRequest* request : order) {
        if (budget <= 0) break;
        if (!request->running) continue;
        for (auto& sequence : request->sequences) {
            if (sequence->finished || budget <= 0) continue;
            const int64_t count = std::min(sequence->pending(), budget);
            if (!make_room(*request, *sequence, sequence->computed + count)) break;
            budget -= count;
            plan.push_back({request, sequence.get(), count});
        }
        if (!request->running) {  // it had to give up its own blocks
            for (const auto& chunk : plan)
                if (chunk.request == request) budget += chunk.count;
            std::erase_if(plan, [&](const ScheduledChunk& chunk) { return chunk.request == request; });
            break;
        }
    }
    // Then admit waiting requests while the budget, the running limit and the KV pool allow.
    while (budget > 0 && !waiting_.empty() && static_cast<int>(running_.size()) < options_.max_running) {
        ActiveRequest& request = *waiting_.front();
        if (!admit(request, budget, plan)) {
            if (running_.empty()) {
                // Even an empty pool cannot hold it: refuse it rather than wait forever.
                auto failed = std::move(waiting_.front());
                waiting_.pop_front();
                {
                    std::lock_guard lock(mutex_);
                    --queued_count_;
                }
                finish(*failed, "the request does not fit in the KV cache");
                continue;
            }
            break;
        }
        request.running = true;
        running_.push_back(std::move(waiting_.front()));
        waiting_.pop_front();
        std::lock_guard lock(mutex_);
        --queued_count_;
    }
    return plan;
}

void Engine::fork_choices(ActiveRequest& request) {
    Sequence& first = *request.sequences.front();
    for (int choice = 1; choice < request.options.n; ++choice) {
        auto child = std::make_unique<Sequence>(next_sequence_id_++, choice, first.tokens, first.prompt_length,
                                                request.options.seed, tokenizer_, request.options.stop);
        // Shares the prompt's full blocks; without room it recomputes later instead.
        child->computed = kv_.fork(first.id, child->id, first.computed) ? first.computed : 0;
        request.sequences.push_back(std::move(child));
    }
    request.forked = true;
}

void Engine::sample_next(ActiveRequest& request, Sequence& sequence, const float* logits, ChoiceDelta& delta) {
    const GenerationOptions& options = request.options;
    const auto vocab = static_cast<size_t>(model_.config().vocab_size);
    scratch_.assign(logits, logits + vocab);
    const std::span<const int32_t> all(sequence.tokens);
    apply_penalties(scratch_, options.penalties, all.first(static_cast<size_t>(sequence.prompt_length)),
                    all.subspan(static_cast<size_t>(sequence.prompt_length)));
    if (options.ignore_eos || sequence.generated() < options.min_tokens) {
        for (int32_t token : end_of_generation_tokens_) scratch_[static_cast<size_t>(token)] = -INFINITY;
    }
    const int32_t token = sample_token(scratch_, options.sampling, sequence.rng, sampler_workspace_);
    if (options.top_logprobs >= 0)
        delta.logprobs.push_back(token_logprob({logits, vocab}, token, options.top_logprobs));
    delta.tokens.push_back(token);
    sequence.tokens.push_back(token);
    ++request.usage.completion_tokens;

    const auto now = Clock::now();
    if (!request.first_token) {
        request.first_token = now;
        if (observer_) observer_->on_first_token(seconds_between(request.submitted, now));
    } else if (observer_ && sequence.generated() > 1) {
        observer_->on_inter_token(seconds_between(sequence.last_token_time, now));
    }
    sequence.last_token_time = now;

    if (tokenizer_.is_end_of_generation(token) && !options.ignore_eos) {
        sequence.finish_reason = FinishReason::Stop;
    } else {
        const auto out = sequence.stop_matcher.push(sequence.detokenizer.push(token));
        delta.text += out.text;
        if (out.stopped) sequence.finish_reason = FinishReason::Stop;
    }
    if (!sequence.finish_reason && (sequence.generated() >= options.max_tokens ||
                                    static_cast<int64_t>(sequence.tokens.size()) >= model_.config().context_length))
        sequence.finish_reason = FinishReason::Length;
    if (sequence.finish_reason) {
        if (*sequence.finish_reason == FinishReason::Length || tokenizer_.is_end_of_generation(token)) {
            // Nothing can follow: release what the stop matcher and detokenizer held back.
            delta.text += sequence.stop_matcher.push(sequence.detokenizer.flush()).text;
            delta.text += sequence.stop_matcher.flush();
        }
        sequence.finished = true;
        delta.finish = sequence.finish_reason;
        kv_.release(sequence.id);
    }
}

void Engine::report_finished(ActiveRequest& request, RequestOutcome outcome) {
    if (!observer_) return;
    RequestTimings timings;
    timings.queue_seconds = request.ever_admitted ? seconds_between(request.submitted, request.first_scheduled) : 0;
    timings.first_token_seconds = request.first_token ? seconds_between(request.submitted, *request.first_token) : 0;
    timings.total_seconds = seconds_between(request.submitted, Clock::now());
    observer_->on_request_finished(outcome, request.usage, timings);
}

void Engine::finish(ActiveRequest& request, std::optional<std::string> error) {
    for (auto& sequence : request.sequences) kv_.release(sequence->id);
    RequestOutcome outcome = RequestOutcome::Error;
    if (!error) {
        const auto reason = request.sequences.front()->finish_reason;
        outcome = reason == FinishReason::Length ? RequestOutcome::Length : RequestOutcome::Stop;
    }
    report_finished(request, outcome);
    GenerationEvent event;
    event.done = true;
    event.error = error;
    event.usage = request.usage;
    request.stream->push(std::move(event));
}

void Engine::step() {
    take_new_requests();
    drop_cancelled();
    std::vector<ScheduledChunk> plan = schedule();
    if (plan.empty()) {
        publish_stats();
        return;
    }

    batch_.clear();
    for (const auto& chunk : plan) {
        Sequence& sequence = *chunk.sequence;
        for (int64_t i = sequence.computed; i < sequence.computed + chunk.count; ++i)
            batch_.add(sequence.tokens[static_cast<size_t>(i)], static_cast<int32_t>(i), sequence.id,
                       i == static_cast<int64_t>(sequence.tokens.size()) - 1);
    }
    const auto vocab = static_cast<size_t>(model_.config().vocab_size);
    logits_.resize(static_cast<size_t>(batch_.output_count()) * vocab);
    Status status = model_.forward(batch_, kv_, logits_.data());

    // Each request gets one event per step with what each of its choices produced.
    std::vector<ActiveRequest*> touched;
    size_t logits_row = 0;
    for (const auto& chunk : plan) {
        ActiveRequest& request = *chunk.request;
        if (std::find(touched.begin(), touched.end(), &request) == touched.end()) touched.push_back(&request);
        if (!status) continue;
        Sequence& sequence = *chunk.sequence;
        sequence.computed += chunk.count;
        kv_.register_computed(sequence.id, sequence.tokens, sequence.computed);
        if (sequence.computed != static_cast<int64_t>(sequence.tokens.size())) continue;  // mid-prefill chunk
        const float* row = logits_.data() + logits_row++ * vocab;
        if (!request.forked && request.options.n > 1) {
            fork_choices(request);
            // Every choice draws its first token from the shared prefill's logits.
            GenerationEvent event;
            for (auto& choice : request.sequences) {
                ChoiceDelta delta;
                delta.index = choice->choice;
                sample_next(request, *choice, row, delta);
                event.deltas.push_back(std::move(delta));
            }
            request.stream->push(std::move(event));
            continue;
        }
        request.forked = true;
        ChoiceDelta delta;
        delta.index = sequence.choice;
        sample_next(request, sequence, row, delta);
        request.stream->push({{std::move(delta)}, false, std::nullopt, {}});
    }

    for (ActiveRequest* request : touched) {
        const bool failed = !status;
        const bool all_done = std::all_of(request->sequences.begin(), request->sequences.end(),
                                          [](const auto& s) { return s->finished; }) &&
                              static_cast<int>(request->sequences.size()) == request->options.n;
        if (!failed && !all_done) continue;
        finish(*request, failed ? std::optional<std::string>("model forward failed: " + status.error().message)
                                : std::nullopt);
        std::erase_if(running_, [&](const auto& r) { return r.get() == request; });
    }
    publish_stats();
}

void Engine::publish_stats() {
    EngineStats stats;
    stats.running_requests = static_cast<int>(running_.size());
    for (const auto& request : running_)
        for (const auto& sequence : request->sequences)
            if (!sequence->finished) {
                ++stats.running_sequences;
                stats.tokens_in_kv += sequence->computed;
            }
    stats.kv_blocks_total = kv_.block_count();
    stats.kv_blocks_used = kv_.used_block_count();
    stats.kv_block_size = kv_.shape().block_size;
    std::lock_guard lock(mutex_);
    stats.waiting_requests = queued_count_;
    stats_ = stats;
}

}  // namespace tempered
