#include "engine/scheduler.h"

#include <algorithm>
#include <utility>

#include "speculative/grammar_drafts.h"

namespace tempered {

void Scheduler::add(std::unique_ptr<Request> request) { waiting_.push_back(std::move(request)); }

StepPlan& Scheduler::schedule() {
    plan_.clear();
    int64_t budget = options_.step_token_budget;
    const int64_t decoding = decoding_sequences();
    prompt_allowance_ = prompt_tokens_within_stall(decoding);
    schedule_running(budget, decoding);
    admit_waiting(budget);
    return plan_;
}

int64_t Scheduler::decoding_sequences() const {
    int64_t decoding = 0;
    for (const auto& request : running_)
        for (const auto& sequence : request->sequences) decoding += !sequence->finished && sequence->pending() == 1;
    return decoding;
}

// The prompt tokens a step may take beside `decoding` decodes under --max-decode-stall-ms: those the step cost
// fit says fit in the bound (auto: twice the step the decodes alone would take), at least kMinimumPrefillChunk;
// the whole budget when nothing decodes, the bound is off or no fit exists yet.
int64_t Scheduler::prompt_tokens_within_stall(int64_t decoding) const {
    auto cost = step_costs_.fit();
    if (options_.max_decode_stall_seconds == 0 || decoding == 0 || !cost || cost->per_token_seconds <= 0)
        return options_.step_token_budget;
    // Every step reads the weights once, so its fixed part is at least that of the steps that only decode. Under
    // load the all-steps line can put it near 0 (steps full of drafts, compute-bound, look proportional to their
    // size), which would shrink the automatic bound to the decodes' own tokens and starve prompts.
    if (const auto decode_cost = decode_costs_.fit())
        cost->fixed_seconds = std::max(cost->fixed_seconds, decode_cost->fixed_seconds);
    const double decode_step = cost->fixed_seconds + cost->per_token_seconds * static_cast<double>(decoding);
    const double bound =
        options_.max_decode_stall_seconds == kAutoDecodeStall ? 2 * decode_step : options_.max_decode_stall_seconds;
    const double fitting = (bound - cost->fixed_seconds) / cost->per_token_seconds;
    const double prompt =
        std::min(fitting - static_cast<double>(decoding), static_cast<double>(options_.step_token_budget));
    return std::max(kMinimumPrefillChunk, static_cast<int64_t>(prompt));
}

// Making room may preempt the newest running requests, so walk a snapshot and skip those that left.
void Scheduler::schedule_running(int64_t& budget, int64_t decoding) {
    order_.clear();
    for (const auto& request : running_) order_.push_back(request.get());
    decode_step_ = decode_step(decoding);
    for (Request* request : order_) {
        if (budget <= 0) break;
        if (!request->running) continue;
        for (auto& sequence : request->sequences) {
            if (sequence->finished || budget <= 0) continue;
            choose_drafts(*request, *sequence, budget);
            const auto drafts = static_cast<int64_t>(sequence->drafts.size());
            const bool prompt = sequence->pending() > 1;
            const int64_t count = std::min({sequence->pending(), budget, prompt ? prompt_allowance_ : budget}) + drafts;
            if (count <= 0) continue;  // a prompt chunk that must wait for the decodes (the stall bound)
            if (prompt) prompt_allowance_ -= count;
            if (!make_room(*request, *sequence, sequence->computed + count)) break;
            budget -= count;
            plan_.chunks.push_back({request, sequence.get(), count, drafts});
        }
        if (!request->running) {  // it had to give up its own blocks: nobody after it holds any either
            for (const auto& chunk : plan_.chunks)
                if (chunk.request == request) budget += chunk.count;
            std::erase_if(plan_.chunks, [&](const ScheduledChunk& chunk) { return chunk.request == request; });
            break;
        }
    }
}

void Scheduler::admit_waiting(int64_t& budget) {
    while (budget > 0 && !waiting_.empty() && static_cast<int>(running_.size()) < options_.max_running) {
        Request& request = *waiting_.front();
        if (!admit(request, budget)) {
            if (!running_.empty()) break;  // first come, first served: the next in line waits too
            // Even an empty pool cannot hold it: refuse it rather than wait forever.
            plan_.refused.push_back(std::move(waiting_.front()));
            waiting_.pop_front();
            continue;
        }
        request.running = true;
        running_.push_back(std::move(waiting_.front()));
        waiting_.pop_front();
    }
}

// Schedules every unfinished sequence of `request` from its longest cached prefix on, or nothing (its
// blocks released again) if one does not fit.
bool Scheduler::admit(Request& request, int64_t& budget) {
    const size_t first_chunk = plan_.chunks.size();
    int64_t left = budget;
    int64_t cached = -1;  // of the first sequence: what the prefix cache gave (imported KV is not cache)
    for (auto& sequence : request.sequences) {
        if (sequence->finished) continue;
        sequence->computed = kv_.adopt_cached_prefix(sequence->id, sequence->tokens);
        if (cached < 0) cached = sequence->computed;
        const bool fits = !crowded(*sequence) && (!request.imported_kv || place_imported_kv(request, *sequence));
        const int64_t count = std::min({sequence->pending(), left, prompt_allowance_});
        if (!fits || count <= 0 || !kv_.ensure_capacity(sequence->id, sequence->computed + count, sequence->computed)) {
            plan_.chunks.resize(first_chunk);
            for (auto& s : request.sequences) {
                kv_.release(s->id);
                s->computed = 0;
            }
            return false;
        }
        left -= count;
        prompt_allowance_ -= count;
        plan_.chunks.push_back({&request, sequence.get(), count});
    }
    budget = left;
    if (!request.ever_admitted) {
        // Counted once, when first admitted, however often the request was turned away before.
        request.ever_admitted = true;
        request.usage.cached_tokens = std::max<int64_t>(cached, 0);
        plan_.admitted_first_time.push_back(&request);
    }
    return true;
}

// Decode side of disaggregation: the prompt's KV came from the prefill server. Positions from the
// cached prefix up to the last prompt token are written from it; only that last token is computed here
// (its logits start the answer). False when there is no room now (the KV is kept for the next try). When
// the prefix cache now covers less than the transfer assumed, or the KV lacks a block, the prompt is
// computed here like any other: slower, never wrong.
bool Scheduler::place_imported_kv(Request& request, Sequence& sequence) {
    const StagedKv& kv = *request.imported_kv;
    const int64_t last = sequence.prompt_length - 1;
    if (request.forked || sequence.computed < kv.first_position || kv.end_position < last ||
        sequence.pending() != sequence.prompt_length - sequence.computed) {
        request.imported_kv.reset();
        ++plan_.imported_kv_dropped;
        return true;
    }
    if (!kv_.ensure_capacity(sequence.id, sequence.prompt_length, last)) return false;
    // The new entries came all at once: a window group returns those the last position cannot see (the
    // prefill server has handed them back too, so they are not in `kv`).
    kv_.hand_back_unreachable(sequence.id, last);
    if (!unstage_kv(kv_, sequence.id, kv, sequence.computed)) {
        kv_.release(sequence.id);  // its window tables already handed back what only a full prefill reads
        sequence.computed = kv_.adopt_cached_prefix(sequence.id, sequence.tokens);
        request.imported_kv.reset();
        ++plan_.imported_kv_dropped;
        return true;
    }
    sequence.computed = last;
    kv_.register_computed(sequence.id, sequence.tokens, last);
    request.imported_kv.reset();
    return true;
}

// A decoding sequence's drafts for this step: the rest of its reasoning's forced end when that is due (certain
// drafts), else its drafter's proposal cut before the first its grammar refuses (grammar_drafts.h); cut to what
// the budget leaves after its token, to its max_tokens, to the context, and to those worth verifying at this
// step's batch and the sequence's acceptance (draft_policy.h). None while it prefills or without a drafter.
DecodeStep Scheduler::decode_step(int64_t decoding) const {
    const auto cost = decode_costs_.fit();
    return cost ? DecodeStep{cost->fixed_seconds, cost->per_token_seconds, decoding} : DecodeStep{};
}

// Drafts a decoding sequence may verify this step: within --speculative-tokens, the step's budget, its
// max_tokens and the context.
int64_t Scheduler::draft_room(const Request& request, const Sequence& sequence, int64_t budget) const {
    int64_t room = std::min<int64_t>(options_.speculative_tokens, budget - 1);
    room = std::min(room, request.options.max_tokens - sequence.generated() - 1);
    if (options_.context_length > 0)
        room = std::min(room, options_.context_length - static_cast<int64_t>(sequence.tokens.size()) - 1);
    return room;
}

std::vector<DraftWanted> Scheduler::drafts_wanted(double seconds_per_draft) const {
    std::vector<DraftWanted> wanted;
    if (options_.speculative_tokens <= 0) return wanted;
    DecodeStep step = decode_step(decoding_sequences());
    step.draft_seconds = seconds_per_draft;
    for (const auto& request : running_) {
        for (const auto& sequence : request->sequences) {
            if (sequence->finished || !sequence->drafts_from_model || sequence->pending() != 1) continue;
            const bool forced_due =
                sequence->reasoning &&
                !sequence->reasoning->forced_tokens_ahead(sequence->generated(), request->options.max_tokens).empty();
            int64_t count = forced_due ? 0 : draft_room(*request, *sequence, options_.step_token_budget);
            count = std::min(count, drafts_worth_verifying(sequence->acceptance.rate(), step, count));
            wanted.push_back({sequence.get(), std::max<int64_t>(count, 0)});
        }
    }
    return wanted;
}

void Scheduler::choose_drafts(const Request& request, Sequence& sequence, int64_t budget) const {
    sequence.drafts.clear();
    const bool drafts = sequence.drafter || sequence.drafts_from_model;
    if (!drafts || sequence.pending() != 1 || options_.speculative_tokens <= 0) return;
    int64_t room = draft_room(request, sequence, budget);
    if (room <= 0) {
        sequence.acceptance.idle();
        return;
    }
    const std::span<const int32_t> forced =
        sequence.reasoning ? sequence.reasoning->forced_tokens_ahead(sequence.generated(), request.options.max_tokens)
                           : std::span<const int32_t>{};
    if (!forced.empty()) {  // the reasoning's forced end: drafts that are always accepted
        sequence.drafts.assign(forced.begin(), forced.end());
        room = std::min(room, drafts_worth_verifying(1.0, decode_step_, static_cast<int64_t>(forced.size())));
    } else {
        sequence.drafts = sequence.drafter ? sequence.drafter->propose() : std::exchange(sequence.model_proposal, {});
        const bool grammar_applies = !sequence.reasoning || !sequence.constraint ||
                                     sequence.reasoning->grammar_applies(sequence.constraint->lazy());
        if (sequence.constraint && grammar_applies)
            sequence.drafts.resize(drafts_the_grammar_allows(*sequence.constraint, sequence.drafts));
        room = std::min(room, drafts_worth_verifying(sequence.acceptance.rate(), decode_step_,
                                                     static_cast<int64_t>(sequence.drafts.size())));
    }
    if (static_cast<int64_t>(sequence.drafts.size()) > room) sequence.drafts.resize(static_cast<size_t>(room));
    if (sequence.drafts.empty()) sequence.acceptance.idle();
}

void Scheduler::observe_step(const StepPlan& plan, double seconds) {
    int64_t tokens = 0;
    bool decode_only = true;
    for (const ScheduledChunk& chunk : plan.chunks) {
        decode_only = decode_only && chunk.count - chunk.drafts == 1;
        tokens += chunk.count;
    }
    if (tokens == 0) return;
    step_costs_.observe(tokens, seconds);
    if (decode_only) decode_costs_.observe(tokens, seconds);
}

// Against thrashing: while others run, admit only a request whose whole prompt fits and still leaves
// every running sequence a block to grow into (one per layer group); otherwise it would be admitted,
// then preempted for them a few steps later, its prefill wasted. The prompt's last chunk is the most
// it holds: all its blocks in global groups, in window groups the window before that chunk onwards.
bool Scheduler::crowded(const Sequence& sequence) const {
    if (running_.empty()) return false;
    const auto prompt = static_cast<int64_t>(sequence.tokens.size());
    const int64_t last_chunk_start = std::max(sequence.computed, prompt - options_.step_token_budget);
    const int64_t blocks_to_finish_prompt =
        kv_.blocks_to_hold(prompt, last_chunk_start) - kv_.held_block_count(sequence.id);
    return kv_.available_block_count() - blocks_to_finish_prompt <
           running_sequence_count() * kv_.layer_groups().group_count();
}

// Finds blocks for `sequence` up to `positions`, preempting the most recently admitted requests.
// False if `for_request` itself had to be preempted (nothing else was left to take from).
bool Scheduler::make_room(Request& for_request, Sequence& sequence, int64_t positions) {
    while (!kv_.ensure_capacity(sequence.id, positions, sequence.computed)) {
        Request* victim = running_.back().get();
        preempt(*victim);
        if (victim == &for_request) return false;
    }
    return true;
}

void Scheduler::preempt(Request& request) {
    for (auto& sequence : request.sequences) {
        kv_.release(sequence->id);
        sequence->computed = 0;
    }
    request.running = false;
    auto it = std::find_if(running_.begin(), running_.end(), [&](const auto& r) { return r.get() == &request; });
    waiting_.push_front(std::move(*it));
    running_.erase(it);
    plan_.preempted.push_back(&request);
}

std::vector<std::unique_ptr<Request>> Scheduler::drop_cancelled() {
    std::vector<std::unique_ptr<Request>> dropped;
    auto take_cancelled = [&](auto& requests) {
        for (auto it = requests.begin(); it != requests.end();) {
            if (!(*it)->cancelled()) {
                ++it;
                continue;
            }
            for (auto& sequence : (*it)->sequences) kv_.release(sequence->id);
            dropped.push_back(std::move(*it));
            it = requests.erase(it);
        }
    };
    take_cancelled(running_);
    take_cancelled(waiting_);
    return dropped;
}

void Scheduler::retire(std::span<Request* const> finished) {
    for (Request* request : finished) std::erase_if(running_, [&](const auto& r) { return r.get() == request; });
}

std::unique_ptr<Request> Scheduler::take_running(Request* request) {
    auto it = std::find_if(running_.begin(), running_.end(), [&](const auto& r) { return r.get() == request; });
    if (it == running_.end()) return nullptr;
    auto taken = std::move(*it);
    running_.erase(it);
    taken->running = false;
    return taken;
}

std::vector<std::unique_ptr<Request>> Scheduler::take_all() {
    std::vector<std::unique_ptr<Request>> all;
    for (auto& request : running_) all.push_back(std::move(request));
    for (auto& request : waiting_) all.push_back(std::move(request));
    running_.clear();
    waiting_.clear();
    return all;
}

void fill_batch(const StepPlan& plan, Batch& batch) {
    batch.clear();
    for (const ScheduledChunk& chunk : plan.chunks) {
        const Sequence& sequence = *chunk.sequence;
        const auto length = static_cast<int64_t>(sequence.tokens.size());
        for (int64_t i = sequence.computed; i < sequence.computed + chunk.count; ++i) {
            const int32_t token =
                i < length ? sequence.tokens[static_cast<size_t>(i)] : sequence.drafts[static_cast<size_t>(i - length)];
            batch.add(token, static_cast<int32_t>(i), sequence.id, i >= length - 1);
        }
    }
}

int64_t Scheduler::running_sequence_count() const {
    int64_t count = 0;
    for (const auto& request : running_)
        for (const auto& sequence : request->sequences) count += sequence->finished ? 0 : 1;
    return count;
}

}  // namespace tempered
