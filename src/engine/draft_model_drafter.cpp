#include "engine/draft_model_drafter.h"

#include <algorithm>
#include <chrono>
#include <unordered_set>

namespace tempered {

namespace {
constexpr int64_t kRoundTokensPerDraft = 8;  // a pass with more tokens per sequence is a prompt's catch-up
constexpr double kPriceLearningRate = 0.1;   // weight of the newest pass in seconds_per_draft
}  // namespace

DraftModelDrafter::DraftModelDrafter(Model& model, KvBlockPool& kv, int64_t max_batch_tokens)
    : model_(model), kv_(kv), max_batch_tokens_(std::max<int64_t>(1, max_batch_tokens)) {}

void DraftModelDrafter::propose(std::span<const DraftWanted> wanted) {
    forget_unlisted(wanted);
    std::vector<DraftWanted> active;
    int64_t rounds = 0;
    for (const DraftWanted& want : wanted) {
        want.sequence->model_proposal.clear();
        if (want.count <= 0 || want.sequence->tokens.empty() || !prepare(want)) continue;
        active.push_back(want);
        rounds = std::max(rounds, want.count);
    }
    if (active.empty()) return;
    bool ran = catch_up(active);
    for (int64_t round = 1; ran && round < rounds; ++round) ran = extend(active, round);
    if (ran) return;
    // What the failed forward wrote is unknown: those caches start again next time, and nothing is proposed.
    for (const DraftWanted& want : active) {
        want.sequence->model_proposal.clear();
        kv_.release(want.sequence->id);
        cached_.erase(want.sequence->id);
    }
}

void DraftModelDrafter::forget_unlisted(std::span<const DraftWanted> wanted) {
    std::unordered_set<int32_t> listed;
    for (const DraftWanted& want : wanted) listed.insert(want.sequence->id);
    for (auto it = cached_.begin(); it != cached_.end();) {
        if (listed.contains(it->first)) {
            ++it;
            continue;
        }
        kv_.release(it->first);
        it = cached_.erase(it);
    }
}

// Keeps the cached tokens that still match the sequence (at most all but its last token, whose logits are
// needed) and makes room for the rest and the drafts. A window group may have given back blocks a query
// before `handed_back_at` would read: a sequence cut back that far starts over.
bool DraftModelDrafter::prepare(const DraftWanted& want) {
    const Sequence& sequence = *want.sequence;
    Cached& cached = cached_[sequence.id];
    const auto [kept, _] =
        std::mismatch(cached.tokens.begin(), cached.tokens.end(), sequence.tokens.begin(), sequence.tokens.end());
    auto common = static_cast<int64_t>(kept - cached.tokens.begin());
    common = std::min(common, static_cast<int64_t>(sequence.tokens.size()) - 1);
    if (common < cached.handed_back_at) {
        kv_.release(sequence.id);
        cached = {};
        common = 0;
    }
    cached.tokens.resize(static_cast<size_t>(common));
    const int64_t positions = static_cast<int64_t>(sequence.tokens.size()) + want.count - 1;
    if (!kv_.ensure_capacity(sequence.id, positions, common)) {
        kv_.release(sequence.id);
        cached_.erase(sequence.id);
        return false;
    }
    cached.handed_back_at = common;
    return true;
}

// The sequences' tokens the draft cache lacks, in forward passes of at most max_batch_tokens_; each
// sequence's last token gives its first draft.
bool DraftModelDrafter::catch_up(std::span<const DraftWanted> active) {
    for (;;) {
        batch_.clear();
        rows_.clear();
        for (const DraftWanted& want : active) {
            const std::vector<int32_t>& tokens = want.sequence->tokens;
            std::vector<int32_t>& cached = cached_[want.sequence->id].tokens;
            while (cached.size() < tokens.size() && batch_.size() < max_batch_tokens_) {
                const size_t position = cached.size();
                const bool last = position + 1 == tokens.size();
                batch_.add(tokens[position], static_cast<int32_t>(position), want.sequence->id, last);
                if (last) rows_.push_back(want.sequence);
                cached.push_back(tokens[position]);
            }
        }
        if (batch_.size() == 0) return true;
        if (!run_batch()) return false;
    }
}

// Draft `round` (from 0) of every sequence that wants more than `round` drafts: its previous draft goes
// through the draft model.
bool DraftModelDrafter::extend(std::span<const DraftWanted> active, int64_t round) {
    batch_.clear();
    rows_.clear();
    for (const DraftWanted& want : active) {
        Sequence& sequence = *want.sequence;
        if (want.count <= round || static_cast<int64_t>(sequence.model_proposal.size()) != round) continue;
        const int32_t previous = sequence.model_proposal.back();
        const auto position = static_cast<int32_t>(sequence.tokens.size()) + static_cast<int32_t>(round) - 1;
        batch_.add(previous, position, sequence.id, true);
        rows_.push_back(&sequence);
        cached_[sequence.id].tokens.push_back(previous);
    }
    return batch_.size() == 0 || run_batch();
}

// A draft costs a forward pass of the draft model: the one-token rounds after the first draft, and the catch-up
// that gives the first (the tokens accepted since, a few per sequence) price the next drafts; a catch-up of a
// whole prompt does not.
bool DraftModelDrafter::run_batch() {
    const auto vocab = static_cast<size_t>(model_.config().vocab_size);
    logits_.resize(rows_.size() * vocab);
    const auto started = std::chrono::steady_clock::now();
    if (!model_.forward(batch_, kv_, logits_.data())) return false;
    positions_run_ += batch_.size();
    const auto rows = static_cast<int64_t>(rows_.size());
    if (rows > 0 && batch_.size() <= kRoundTokensPerDraft * rows) {
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() /
                               static_cast<double>(rows);
        seconds_per_draft_ = seconds_per_draft_ == 0
                                 ? seconds
                                 : seconds_per_draft_ + kPriceLearningRate * (seconds - seconds_per_draft_);
    }
    for (size_t row = 0; row < rows_.size(); ++row) rows_[row]->model_proposal.push_back(argmax(row));
    return true;
}

// The draft model's greedy choice; ties go to the lower id.
int32_t DraftModelDrafter::argmax(size_t row) const {
    const auto vocab = static_cast<size_t>(model_.config().vocab_size);
    const float* logits = logits_.data() + row * vocab;
    return static_cast<int32_t>(std::max_element(logits, logits + vocab) - logits);
}

}  // namespace tempered
