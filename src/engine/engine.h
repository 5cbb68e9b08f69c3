// The engine: one thread running one scheduler loop over every request.
//
// Each step gives every running sequence a number of tokens under one shared token budget
// (vLLM v1's idea): a decoding sequence needs one, a sequence in prefill gets a chunk of its prompt,
// a preempted one recomputes. So chunked prefill, prefix-cache hits, decode and recompute after
// preemption are one mechanism. All scheduled tokens go through the model together in one Batch, so each
// weight is read once per step. When KV blocks run out, the most recently admitted request is preempted
// (its blocks freed, its tokens kept) and recomputed later: a request never fails for lack of KV.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "engine/engine_observer.h"
#include "engine/generation.h"
#include "kv/kv_block_pool.h"
#include "models/model.h"
#include "tokenizer/tokenizer.h"

namespace tempered {

struct EngineOptions {
    int max_running = 64;             // requests decoding at once
    int max_queued = 256;             // requests waiting beyond those; past it submit() refuses
    int64_t step_token_budget = 512;  // tokens per forward step, over all sequences
};

struct EngineStats {
    int running_requests = 0;
    int waiting_requests = 0;
    int64_t running_sequences = 0;
    int64_t kv_blocks_total = 0;
    int64_t kv_blocks_used = 0;
    int64_t kv_block_size = 0;
    int64_t tokens_in_kv = 0;  // positions held by running sequences
};

enum class SubmitRefusal { QueueFull, Draining };

struct SubmitResult {
    std::shared_ptr<GenerationStream> stream;  // set on success
    std::optional<SubmitRefusal> refusal;
};

class Engine {
public:
    // `model`, `tokenizer` and `kv` must outlive the engine; `observer` may be null. The engine thread
    // owns `model` while the engine lives: a model's forward buffers are not shared between callers.
    Engine(Model& model, const Tokenizer& tokenizer, KvBlockPool& kv, EngineOptions options,
           EngineObserver* observer = nullptr);
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    SubmitResult submit(GenerationOptions options);
    EngineStats stats() const;
    // Refuse new requests from now on; those accepted still finish.
    void begin_drain() { draining_ = true; }
    bool idle() const;

private:
    struct Sequence;
    struct ActiveRequest;
    struct ScheduledChunk {
        ActiveRequest* request;
        Sequence* sequence;
        int64_t count;
    };

    void loop();
    void step();
    void take_new_requests();
    void drop_cancelled();
    std::vector<ScheduledChunk> schedule();
    bool make_room(ActiveRequest& for_request, Sequence& sequence, int64_t positions);
    void preempt(ActiveRequest& request);
    bool admit(ActiveRequest& request, int64_t& budget, std::vector<ScheduledChunk>& plan);
    int64_t running_sequence_count() const;
    void fork_choices(ActiveRequest& request);
    void sample_next(ActiveRequest& request, Sequence& sequence, const float* logits, ChoiceDelta& delta);
    void finish(ActiveRequest& request, std::optional<std::string> error = std::nullopt);
    void report_finished(ActiveRequest& request, RequestOutcome outcome);
    void publish_stats();

    Model& model_;
    const Tokenizer& tokenizer_;
    KvBlockPool& kv_;
    EngineOptions options_;
    EngineObserver* observer_;
    std::vector<int32_t> end_of_generation_tokens_;  // masked while min_tokens is unmet or with ignore_eos

    mutable std::mutex mutex_;  // guards incoming_, stats_, queued_count_
    std::condition_variable wake_;
    std::deque<std::unique_ptr<ActiveRequest>> incoming_;
    int queued_count_ = 0;  // incoming_ + waiting_, as submit() sees it
    EngineStats stats_;
    std::atomic<bool> stopping_{false};
    std::atomic<bool> draining_{false};

    // Engine thread only.
    std::list<std::unique_ptr<ActiveRequest>> running_;  // in admission order
    std::deque<std::unique_ptr<ActiveRequest>> waiting_;
    int32_t next_sequence_id_ = 0;
    Batch batch_;
    std::vector<float> logits_;   // (outputs, vocab)
    std::vector<float> scratch_;  // (vocab): logits after penalties and masks
    SamplerWorkspace sampler_workspace_;

    std::thread thread_;
};

}  // namespace tempered
