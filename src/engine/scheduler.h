// The scheduler: which tokens of which sequences go through the model this step.
//
// One shared token budget per step (vLLM v1's idea): a decoding sequence needs one token, a sequence
// in prefill gets a chunk of its prompt, a preempted one recomputes, and blocks found in the prefix
// cache are simply not computed again. So chunked prefill, prefix-cache hits, decode and recompute
// after preemption are one mechanism. Running requests go first, oldest first: they hold KV already.
// When blocks run out, the most recently admitted request is preempted (its blocks freed, its tokens
// kept) and rejoins the front of the queue. Then waiting requests are admitted in order while the
// budget, max_running and the KV pool allow; one that even an empty pool cannot hold is refused.
// Blocks are counted as the pool hands them out, per layer group: a sliding-window group gives back
// what its window has left as it takes new blocks (kv/kv_block_pool.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <span>
#include <vector>

#include "engine/sequence.h"
#include "engine/step_cost_model.h"
#include "kv/kv_block_pool.h"
#include "models/batch.h"

namespace tempered {

struct SchedulerOptions {
    int max_running = 64;             // requests running at once
    int64_t step_token_budget = 512;  // tokens per forward step, over all sequences
    int speculative_tokens = 0;       // drafts verified after a decoding sequence's token (its drafter's); 0: off
    int64_t context_length = 0;       // positions a sequence may reach (drafts never go past it); 0: unbounded
    // While sequences decode, a step's prompt tokens are capped so that the step is predicted (by the fit of
    // step time against tokens) to take at most this long: running decodes are not held behind a long prompt
    // chunk. At least kMinimumPrefillChunk prompt tokens still go into each step. 0: off (only the budget caps);
    // kAutoDecodeStall: twice the predicted time of the step without prompt tokens, whatever the load.
    double max_decode_stall_seconds = 0;
};

inline constexpr double kAutoDecodeStall = -1;

inline constexpr int64_t kMinimumPrefillChunk = 16;

// Tokens [sequence->computed, sequence->computed + count) of one sequence, for this step's batch; past the
// sequence's tokens, its drafts (count = 1 + drafts when a decoding sequence speculates).
struct ScheduledChunk {
    Request* request;
    Sequence* sequence;
    int64_t count;
    int64_t drafts = 0;  // of count, the sequence's drafts (after its last token)
};

// A decoding sequence that drafts with a draft model, and how many drafts are worth making for it this step.
struct DraftWanted {
    Sequence* sequence;
    int64_t count;
};

// One step's decisions. Valid until the next schedule().
struct StepPlan {
    std::vector<ScheduledChunk> chunks;             // in batch order: running requests oldest first, then admitted ones
    std::vector<Request*> admitted_first_time;      // their prefix lookup is done: usage.cached_tokens is set
    std::vector<Request*> preempted;                // blocks freed, back at the front of the queue
    std::vector<std::unique_ptr<Request>> refused;  // even an empty pool cannot hold them; out of the queue
    int imported_kv_dropped = 0;                    // imports that fell back to computing the prompt here

    void clear() {
        chunks.clear();
        admitted_first_time.clear();
        preempted.clear();
        refused.clear();
        imported_kv_dropped = 0;
    }
};

// The plan's tokens as one batch, in plan order; a sequence's last token wants logits, and so does each
// of its drafts (each is verified by the token drawn at the position before it).
void fill_batch(const StepPlan& plan, Batch& batch);

class Scheduler {
public:
    // `kv` must outlive the scheduler.
    Scheduler(KvBlockPool& kv, SchedulerOptions options) : kv_(kv), options_(options) {}

    // A new request, with its first sequence, joins the back of the queue.
    void add(std::unique_ptr<Request> request);
    // Plans the next step: reserves KV blocks for every chunk, preempts and admits.
    StepPlan& schedule();
    // Takes out the requests whose reader is gone, running or waiting, and frees their blocks.
    std::vector<std::unique_ptr<Request>> drop_cancelled();
    // Removes finished requests (their blocks already released) from the running ones.
    void retire(std::span<Request* const> finished);
    // Takes a running request out, e.g. a finished one whose last event waits for its KV transfer.
    std::unique_ptr<Request> take_running(Request* request);
    // Takes out every request, running ones first (for a shutdown).
    std::vector<std::unique_ptr<Request>> take_all();

    const std::list<std::unique_ptr<Request>>& running() const { return running_; }
    const std::deque<std::unique_ptr<Request>>& waiting() const { return waiting_; }
    bool has_work() const { return !running_.empty() || !waiting_.empty(); }
    int64_t running_sequence_count() const;
    // The step just run took `seconds`: decode-only steps feed the cost fit that decides how many drafts
    // are worth verifying (speculative/draft_policy.h).
    void observe_step(const StepPlan& plan, double seconds);
    std::optional<StepCost> decode_step_cost() const { return decode_costs_.fit(); }
    std::optional<StepCost> step_cost() const { return step_costs_.fit(); }
    // Before schedule(): the running sequences that draft with a draft model and decode next, each with the
    // drafts worth making (the policy's count within the sequence's room, a draft costing `seconds_per_draft`
    // to make; 0 when its reasoning's forced end is due, which needs no drafter). The engine has the draft model
    // propose them (engine/draft_model_drafter.h).
    std::vector<DraftWanted> drafts_wanted(double seconds_per_draft) const;

private:
    int64_t decoding_sequences() const;
    int64_t prompt_tokens_within_stall(int64_t decoding) const;
    void schedule_running(int64_t& budget, int64_t decoding);
    void admit_waiting(int64_t& budget);
    bool admit(Request& request, int64_t& budget);
    bool place_imported_kv(Request& request, Sequence& sequence);
    bool crowded(const Sequence& sequence) const;
    bool make_room(Request& for_request, Sequence& sequence, int64_t positions);
    void choose_drafts(const Request& request, Sequence& sequence, int64_t budget) const;
    int64_t draft_room(const Request& request, const Sequence& sequence, int64_t budget) const;
    DecodeStep decode_step(int64_t decoding) const;
    void preempt(Request& request);

    KvBlockPool& kv_;
    SchedulerOptions options_;
    std::list<std::unique_ptr<Request>> running_;  // in admission order
    std::deque<std::unique_ptr<Request>> waiting_;
    StepPlan plan_;
    std::vector<Request*> order_;   // the running requests as a step began
    StepCostModel decode_costs_;    // decode-only steps: what a draft position costs
    StepCostModel step_costs_;      // every step: how many prompt tokens fit the stall bound
    int64_t prompt_allowance_ = 0;  // this step's prompt tokens left under the stall bound
    DecodeStep decode_step_;        // this step's, for choose_drafts (speculative/draft_policy.h)
};

}  // namespace tempered
