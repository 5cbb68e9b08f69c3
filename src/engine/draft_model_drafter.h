// Drafts from a second, smaller model with the same vocabulary (`--speculative draft --draft-model M`): before
// each step, the draft model decodes a few tokens greedily after every sequence that drafts from it, in one
// batch per draft position, and the target verifies them in its step as it verifies prompt lookup's.
//
// The drafts are the draft model's argmax, so its distribution q is one-hot at the draft (llama.cpp's drafts
// are greedy too): the engine keeps its one rule, drawing the target's token from p with the request's own
// random stream and comparing it with the draft (speculative/rejection_sampling.h, the one-hot case), so
// output, seeded output and logprobs are those of speculation off, bit for bit.
//
// The draft model keeps its own KV pool. Per sequence it remembers which tokens its cache holds; the next
// proposal keeps the longest prefix of those that still matches the sequence (the accepted drafts are
// already there) and computes the rest, so a rejection costs nothing to undo: later positions are
// overwritten.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/scheduler.h"
#include "kv/kv_block_pool.h"
#include "models/batch.h"
#include "models/model.h"

namespace tempered {

class DraftModelDrafter {
public:
    // `model` and `kv` (a pool of the draft model's cache shape) must outlive the drafter; the engine thread
    // alone calls it. `max_batch_tokens` caps one forward pass (a long prompt is caught up in pieces).
    DraftModelDrafter(Model& model, KvBlockPool& kv, int64_t max_batch_tokens);

    // Sets each listed sequence's `model_proposal` to `count` greedy draft tokens after its tokens (fewer when
    // its cache does not fit the pool; none when the forward fails). Sequences not listed give back their
    // cache (finished, preempted, or not decoding this step).
    void propose(std::span<const DraftWanted> wanted);

    // Positions the draft model ran since it was made: caught-up prompt and output tokens, and drafts.
    int64_t positions_run() const { return positions_run_; }
    // What one more draft costs a sequence: a moving average of the draft model's passes that make drafts (not
    // a prompt's catch-up), each pass's time shared by the sequences it drafts for; 0 until one has run. The scheduler
    // prices drafts with it (speculative/draft_policy.h).
    double seconds_per_draft() const { return seconds_per_draft_; }

private:
    struct Cached {
        std::vector<int32_t> tokens;  // whose keys and values the draft cache holds, in order
        int64_t handed_back_at = 0;   // window groups gave back what a query from here cannot reach
    };
    void forget_unlisted(std::span<const DraftWanted> wanted);
    bool prepare(const DraftWanted& wanted);
    bool catch_up(std::span<const DraftWanted> active);
    bool extend(std::span<const DraftWanted> active, int64_t round);
    bool run_batch();
    int32_t argmax(size_t row) const;

    Model& model_;
    KvBlockPool& kv_;
    int64_t max_batch_tokens_;
    std::unordered_map<int32_t, Cached> cached_;  // by sequence id
    Batch batch_;
    std::vector<Sequence*> rows_;  // whose logits each output row of the batch is
    std::vector<float> logits_;
    int64_t positions_run_ = 0;
    double seconds_per_draft_ = 0;
};

}  // namespace tempered
