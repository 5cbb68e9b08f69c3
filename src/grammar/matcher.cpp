#include "grammar/matcher.h"

#include <algorithm>

namespace tempered::grammar {

Matcher::Matcher(const Grammar& grammar) : grammar_(grammar) {
    begin_set();
    for (uint32_t start : grammar_.rule_alternatives.at(grammar_.root)) close_over(start, kNoFrame);
}

Matcher::Matcher(const Grammar& grammar, std::span<const uint32_t> context) : grammar_(grammar) {
    begin_set();
    uint32_t parent = kNoFrame;
    for (size_t i = context.size(); i-- > 1;) parent = push_frame(context[i], parent);
    close_over(context[0], parent);
}

Matcher Matcher::at_context(const Grammar& grammar, std::span<const uint32_t> context) {
    return Matcher(grammar, context);
}

void Matcher::leaf_context(size_t i, size_t depth, std::vector<uint32_t>& out) const {
    out.clear();
    for (uint32_t frame = leaves_[history_.back().leaf_begin + i]; frame != kNoFrame && out.size() < depth;
         frame = frames_[frame].parent) {
        out.push_back(frames_[frame].position);
    }
}

void Matcher::begin_set() {
    history_.push_back({frames_.size(), leaves_.size(), false});
    reached_.clear();
    reached_index_.clear();
    return_frames_.clear();
    return_frame_index_.clear();
}

bool Matcher::accept_byte(uint8_t byte) {
    const StackSet current = history_.back();
    const size_t leaf_end = leaves_.size();
    begin_set();
    for (size_t i = current.leaf_begin; i < leaf_end; ++i) {
        const Frame top = frames_[leaves_[i]];
        const Element& element = grammar_.elements[top.position];
        if (grammar_.byte_sets[element.index].contains(byte)) close_over(top.position + 1, top.parent);
    }
    if (can_continue() || is_complete()) return true;
    rollback(history_.size() - 1);
    return false;
}

bool Matcher::accept_bytes(std::string_view bytes) {
    const Checkpoint start = checkpoint();
    for (char c : bytes) {
        if (!accept_byte(static_cast<uint8_t>(c))) {
            rollback(start);
            return false;
        }
    }
    return true;
}

void Matcher::rollback(Checkpoint point) {
    if (point == 0 || point >= history_.size()) return;
    const StackSet& first_dropped = history_[point];
    frames_.resize(first_dropped.frame_begin);
    leaves_.resize(first_dropped.leaf_begin);
    history_.resize(point);
}

void Matcher::drop_history() {
    // Keep only the frames the current leaves reach, renumbered, as the one remaining set.
    const StackSet current = history_.back();
    std::vector<Frame> kept;
    std::vector<uint32_t> renumbered(frames_.size(), kNoFrame);
    auto keep = [&](auto& self, uint32_t frame) -> uint32_t {
        if (frame == kNoFrame) return kNoFrame;
        if (renumbered[frame] != kNoFrame) return renumbered[frame];
        uint32_t parent = self(self, frames_[frame].parent);
        kept.push_back({frames_[frame].position, parent});
        return renumbered[frame] = static_cast<uint32_t>(kept.size() - 1);
    };
    std::vector<uint32_t> leaves;
    for (size_t i = current.leaf_begin; i < leaves_.size(); ++i) leaves.push_back(keep(keep, leaves_[i]));
    frames_ = std::move(kept);
    leaves_ = std::move(leaves);
    history_ = {{0, 0, current.complete}};
}

// Follows `position` under `parent` until every path stops at a byte set (a new leaf) or runs off the end
// of the root rule (the sentence may be complete here). Depth first, in the grammar's order, over an explicit
// stack rather than by recursion: a chain of rules entered before a byte (a client's GBNF may hold thousands)
// must not exhaust the thread's stack.
void Matcher::close_over(uint32_t position, uint32_t parent) {
    pending_.clear();
    pending_.push_back({position, parent, false});
    while (!pending_.empty()) {
        const PendingWalk walk = pending_.back();
        pending_.pop_back();
        // Reaching the same (start, return) twice in one step is a cycle through nullable rules, or a duplicate
        // stack: either way nothing new to follow.
        if (walk.rule_entry && already_reached(walk.position | kRuleEntry, walk.parent)) continue;
        follow(walk.position, walk.parent);
    }
}

// One path of close_over: to a leaf, the sentence's end, or a rule, whose alternatives it leaves on the stack.
void Matcher::follow(uint32_t position, uint32_t parent) {
    for (;;) {
        const Element& element = grammar_.elements[position];
        switch (element.kind) {
            case Element::Kind::kBytes:
                if (!already_reached(position, parent)) leaves_.push_back(push_frame(position, parent));
                return;
            case Element::Kind::kEnd:
                if (parent == kNoFrame) {
                    history_.back().complete = true;
                    return;
                }
                position = frames_[parent].position;
                parent = frames_[parent].parent;
                continue;
            case Element::Kind::kRule: {
                // A rule in tail position returns straight to our parent: right recursion (repetition)
                // then keeps stacks flat instead of growing one frame per item.
                const bool tail = grammar_.elements[position + 1].kind == Element::Kind::kEnd;
                const uint32_t return_to = tail ? parent : return_frame(position + 1, parent);
                const auto& alternatives = grammar_.rule_alternatives[element.index];
                // Last pushed, first followed: the first alternative goes first, as recursion would.
                for (auto it = alternatives.rbegin(); it != alternatives.rend(); ++it)
                    pending_.push_back({*it, return_to, true});
                return;
            }
        }
    }
}

uint32_t Matcher::push_frame(uint32_t position, uint32_t parent) {
    frames_.push_back({position, parent});
    return static_cast<uint32_t>(frames_.size() - 1);
}

// The frame to return to at `position` under `parent`, one per pair in a step: paths that meet there again
// (after nullable items completed at different points) share it, so the closure's dedup sees them as one and a
// sequence of nullable repetitions stays linear instead of multiplying its paths.
uint32_t Matcher::return_frame(uint32_t position, uint32_t parent) {
    const uint64_t key = (uint64_t{position} << 32) | parent;
    constexpr size_t kScanned = 64;
    if (return_frames_.size() < kScanned) {
        for (const auto& [known, frame] : return_frames_)
            if (known == key) return frame;
        const uint32_t frame = push_frame(position, parent);
        return_frames_.push_back({key, frame});
        if (return_frames_.size() == kScanned) return_frame_index_.insert(return_frames_.begin(), return_frames_.end());
        return frame;
    }
    if (const auto found = return_frame_index_.find(key); found != return_frame_index_.end()) return found->second;
    const uint32_t frame = push_frame(position, parent);
    return_frames_.push_back({key, frame});
    return_frame_index_.emplace(key, frame);
    return frame;
}

bool Matcher::already_reached(uint32_t position, uint32_t parent) {
    const uint64_t key = (uint64_t{position} << 32) | parent;
    // A step reaches a handful of positions with the grammars we compile: a scan is fastest. A client's grammar
    // can make one step reach tens of thousands: past a few dozen, a hash set keeps the step linear.
    constexpr size_t kScanned = 64;
    if (reached_.size() < kScanned) {
        if (std::find(reached_.begin(), reached_.end(), key) != reached_.end()) return true;
        reached_.push_back(key);
        if (reached_.size() == kScanned) reached_index_.insert(reached_.begin(), reached_.end());
        return false;
    }
    if (!reached_index_.insert(key).second) return true;
    reached_.push_back(key);
    return false;
}

}  // namespace tempered::grammar
