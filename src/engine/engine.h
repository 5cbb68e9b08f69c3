// The engine: one thread running one step loop over every request, and the queue that feeds it.
//
// Each step is glue: the scheduler (scheduler.h) gives sequences tokens under one shared budget and
// preempts or admits requests; all scheduled tokens go through the model together in one Batch, so each
// weight is read once per step; postprocess (postprocess.h) turns the logits into tokens, text and
// events. A request never fails for lack of KV: a preempted one is recomputed later.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "engine/draft_model_drafter.h"
#include "engine/engine_observer.h"
#include "engine/generation.h"
#include "engine/generator.h"
#include "engine/postprocess.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"
#include "kv/kv_block_pool.h"
#include "models/model.h"
#include "tokenizer/tokenizer.h"

namespace tempered {

struct EngineOptions {
    int max_running = 64;             // requests decoding at once
    int max_queued = 256;             // requests waiting beyond those; past it submit() refuses
    int64_t step_token_budget = 512;  // tokens per forward step, over all sequences
    // Speculation: up to this many drafts verified after a decoding sequence's token in the same step; 0: off.
    // Single-choice requests only. The drafts are prompt lookup's (speculative/ngram_drafter.h), or with a
    // `draft_model` (which must outlive the engine) that model's (engine/draft_model_drafter.h).
    int speculative_tokens = 0;
    DraftModelDrafter* draft_model = nullptr;
    // While sequences decode, prompt chunks are cut so that a step is predicted to take at most this long
    // (scheduler.h); 0: off; kAutoDecodeStall: twice the step the decodes alone take.
    double max_decode_stall_seconds = 0;
};

class Engine final : public Generator {
public:
    // `model`, `tokenizer` and `kv` must outlive the engine; `observer` may be null. The engine thread
    // owns `model` while the engine lives: a model's forward buffers are not shared between callers.
    Engine(Model& model, const Tokenizer& tokenizer, KvBlockPool& kv, EngineOptions options,
           EngineObserver* observer = nullptr);
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    SubmitResult submit(GenerationOptions options) override;
    EngineStats stats() const override;
    void begin_drain() override { draining_ = true; }
    bool idle() const override;
    // Drops every cached prefix block nobody uses, on the engine thread (engine_cache_flush.cpp).
    std::optional<CacheFlush> flush_cache(std::chrono::milliseconds timeout) override;

private:
    void loop();
    void step();
    void take_new_requests();
    void settle_kv_transfers();
    void settle_imports();
    void start_imports();
    void settle_exports();
    void wake_for_transfer();
    std::function<void()> transfer_ready();
    void drop_cancelled();
    void report_plan(const StepPlan& plan);
    void report_expert_traffic();  // the last forward's routed-expert bytes, to the observer
    void build_batch(const StepPlan& plan);
    void shut_down();
    void publish_stats();
    void serve_cache_flushes();

    Model& model_;
    const Tokenizer& tokenizer_;
    KvBlockPool& kv_;
    EngineOptions options_;
    EngineObserver* observer_;
    // What a transfer's thread calls: it wakes the engine while there is one, and does nothing after the
    // destructor has begun (a callback may be on its way when a transfer outlives the engine).
    struct TransferWaker {
        std::mutex mutex;
        Engine* engine = nullptr;
    };
    std::shared_ptr<TransferWaker> waker_ = std::make_shared<TransferWaker>();

    mutable std::mutex mutex_;  // guards incoming_, stats_, queued_count_, transfer_news_, cache_flushes_
    std::condition_variable wake_;
    std::deque<std::unique_ptr<Request>> incoming_;
    int queued_count_ = 0;  // incoming_ + the scheduler's waiting requests, as submit() sees it
    EngineStats stats_;
    bool transfer_news_ = false;  // a KV transfer's poll() has something to say
    std::atomic<bool> stopping_{false};
    std::atomic<bool> draining_{false};
    std::vector<std::promise<CacheFlush>> cache_flushes_;  // asked for by flush_cache(); guarded by mutex_

    // Engine thread only.
    SequenceIds sequence_ids_;
    Scheduler scheduler_;
    Postprocessor postprocess_;
    std::vector<std::unique_ptr<Request>> importing_;  // decode side: their prompt's KV is on its way
    std::vector<std::unique_ptr<Request>> exporting_;  // prefill side: done, until the KV has landed
    Batch batch_;
    std::vector<float> logits_;  // (outputs, vocab)

    std::thread thread_;
};

}  // namespace tempered
