// Matcher: a byte-at-a-time recognizer for a Grammar, with O(1) checkpoints and cheap rollback.
//
// The state is the set of parse stacks that can consume the next byte (llama.cpp's approach, made
// persistent): a stack is a chain of frames, the top one at a byte-set element, the others holding the
// position to return to when the rule above them ends. Frames live in one append-only arena and are never
// modified, so stacks share their tails, and a rollback is a truncation of three vectors. Each accepted
// byte pushes one new stack set on a history; `checkpoint()` is the history depth.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "grammar/grammar.h"

namespace tempered::grammar {

class Matcher {
public:
    // The grammar must outlive the matcher.
    explicit Matcher(const Grammar& grammar);
    // A matcher for a cut-off stack: `context[0]` a byte-set position, `context[1..]` the positions its
    // enclosing rules return to, innermost first. The sentence "ends" (is_complete) where the outermost
    // given one would return. Used to classify tokens per stack top.
    static Matcher at_context(const Grammar& grammar, std::span<const uint32_t> context);

    // Advances over one byte; on rejection the state is unchanged and the result is false.
    bool accept_byte(uint8_t byte);
    // Advances over all bytes or none: on rejection the state is rolled back to before the call.
    bool accept_bytes(std::string_view bytes);
    // The bytes so far form a complete sentence of the grammar.
    bool is_complete() const { return history_.back().complete; }
    // Some byte can still be accepted.
    bool can_continue() const { return history_.back().leaf_begin < leaves_.size(); }

    // The grammar positions (byte-set elements) the next byte is matched against; may repeat.
    size_t leaf_count() const { return leaves_.size() - history_.back().leaf_begin; }
    uint32_t leaf_position(size_t i) const { return frames_[leaves_[history_.back().leaf_begin + i]].position; }
    // The top `depth` (or fewer) positions of leaf i's stack, innermost first (see at_context).
    void leaf_context(size_t i, size_t depth, std::vector<uint32_t>& out) const;

    using Checkpoint = size_t;
    Checkpoint checkpoint() const { return history_.size(); }
    // Returns to the state at `point` (from checkpoint() at or before the current state).
    void rollback(Checkpoint point);

    // Forgets the rollback history so memory stops growing with the output; the current state stays.
    void drop_history();

private:
    static constexpr uint32_t kNoFrame = UINT32_MAX;
    // Tags rule entries in `reached_` apart from leaves at the same position.
    static constexpr uint32_t kRuleEntry = uint32_t{1} << 31;
    struct Frame {
        uint32_t position;  // into grammar.elements
        uint32_t parent;    // frame to continue with when this alternative ends; kNoFrame = sentence end
    };
    struct StackSet {
        size_t frame_begin;  // frames_ size before this set was built
        size_t leaf_begin;   // its leaves are leaves_[leaf_begin, next set's leaf_begin)
        bool complete;
    };

    Matcher(const Grammar& grammar, std::span<const uint32_t> context);
    void begin_set();
    void close_over(uint32_t position, uint32_t parent);
    void follow(uint32_t position, uint32_t parent);
    uint32_t push_frame(uint32_t position, uint32_t parent);
    uint32_t return_frame(uint32_t position, uint32_t parent);
    bool already_reached(uint32_t position, uint32_t parent);

    const Grammar& grammar_;
    std::vector<Frame> frames_;
    std::vector<uint32_t> leaves_;  // frames whose top element is a byte set, per stack set
    std::vector<StackSet> history_;
    std::vector<uint64_t> reached_;               // (position, parent) pairs seen while building the current set
    std::unordered_set<uint64_t> reached_index_;  // the same, once there are many (already_reached)
    std::vector<std::pair<uint64_t, uint32_t>> return_frames_;   // (position, parent) -> frame, this step's
    std::unordered_map<uint64_t, uint32_t> return_frame_index_;  // the same, once there are many
    struct PendingWalk {
        uint32_t position;
        uint32_t parent;
        bool rule_entry;  // the start of a rule's alternative, entered once per (start, parent) in a step
    };
    std::vector<PendingWalk> pending_;  // close_over's depth-first stack
};

}  // namespace tempered::grammar
