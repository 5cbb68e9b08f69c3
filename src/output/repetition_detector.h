// Loop detection for one sequence: fed the output one token at a time, it notices the moment the output's
// suffix becomes a block of p tokens repeated min_count times in a row (min_pattern_size <= p <=
// max_pattern_size), the shape of a degenerate loop such as `</div></div></div>` or "la Femme, la Femme, ...".
//
// What counts as one repeat (vLLM's `repetition_detection` semantics): one whole copy of the block, the
// first occurrence included. "ab ab ab" is the block "ab" with 3 repeats; min_count = 3 fires on its last
// token. Only the suffix counts: a loop that was broken starts over.
//
// How: for every period p a run-length counter of consecutive positions i with token[i] == token[i - p].
// The last k * p tokens are k copies of one p-token block exactly when that run is at least (k - 1) * p, so
// each step is one comparison and one increment-or-clear per period, over contiguous arrays the compiler
// vectorises: O(max_pattern_size) per token, independent of the output's length, with O(max_pattern_size)
// memory. The smallest firing period is reported, so "ab" repeated is period 2, never 4.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace tempered {

// The request's `repetition_detection` object, with vLLM's names and meaning of zero.
struct RepetitionDetectionParams {
    int32_t max_pattern_size = 0;  // longest block looked for, in tokens; 0 turns detection off
    int32_t min_pattern_size = 0;  // shortest block; 0 means 1
    int32_t min_count = 0;         // whole copies of the block in a row that count as a loop; >= 2 when on
    // Not vLLM's: the loop must also cover at least this many tokens (0: no minimum). One min_count cannot
    // both catch a 4-token phrase after a few copies and spare 3 dashes of a table rule; a length can.
    int32_t min_loop_tokens = 0;
    // Not vLLM's: also look for loops of shapes, numbers whatever their digits and, under a grammar, JSON
    // structure whatever its strings (output/loop_channel.h). Off here; the server's guard turns it on.
    bool shapes = false;
    // Not vLLM's: the loop must also cover at least this share of the output's last kLoopShareWindow tokens (of
    // the whole output while it is shorter) before it counts; until then it is followed, and forgotten if it
    // breaks first. 0: none. A few repeated sentences near the end of a long answer are not yet a loop; a loop
    // that takes over is, however long the output already is.
    float min_loop_share = 0.0f;

    bool enabled() const { return max_pattern_size > 0; }
};

inline constexpr int64_t kLoopShareWindow = 512;

// The longest period a detector may watch: it bounds the per-token cost and the per-sequence memory.
inline constexpr int32_t kMaxRepetitionPatternSize = 1024;

// Which of the params is wrong and the rule it breaks, so the API can name the field in its 400.
struct InvalidRepetitionParam {
    std::string field;  // "max_pattern_size", "min_pattern_size", "min_count", "min_loop_tokens" or "min_loop_share"
    std::string rule;   // "must be >= 2 when max_pattern_size is set"
};

// The params as a detector takes them (min_pattern_size 0 becomes 1), or the field at fault: negative
// sizes, min_pattern_size > max_pattern_size, max_pattern_size above the limit, min_count < 2 while
// detection is on, or a negative min_loop_tokens.
Result<RepetitionDetectionParams, InvalidRepetitionParam> validate_repetition_detection(
    RepetitionDetectionParams params);

// One detected loop.
struct RepetitionEvent {
    int64_t detected_at_token = 0;  // 0-based index of the observed token that completed the min_count-th copy
    int32_t period = 0;             // the block's length in tokens: the smallest period in range that fired
    int32_t repeats = 0;  // whole copies of the block ending at that token (min_count, or more under min_loop_tokens)
};

class RepetitionDetector {
public:
    // `params` as validate_repetition_detection returns them; params that are off (or invalid) give a
    // detector that never fires.
    explicit RepetitionDetector(const RepetitionDetectionParams& params);

    // Feeds the next output token (a vocabulary id, or a shape unit: any value but -1). Returns the event on the token
    // where the first loop is detected, and nothing before or after it: a sequence reports one loop until reset().
    std::optional<RepetitionEvent> observe(int32_t token);

    // The loop detected so far, if any.
    const std::optional<RepetitionEvent>& detection() const { return detection_; }

    // Whole copies of a `period`-token block that end at the last observed token (1 for any suffix of at
    // least `period` tokens, 0 before that or for a period outside 1..max_pattern_size). Lets a caller
    // that keeps generating after a detection report how long the loop went on.
    int32_t current_repeats(int32_t period) const;

    int64_t tokens_observed() const { return tokens_observed_; }

    // Forgets every observed token and the detection: the state of a new sequence.
    void reset();

private:
    bool enabled() const { return max_period_ > 0; }
    std::optional<RepetitionEvent> first_firing_period() const;

    int32_t min_period_ = 0;
    int32_t max_period_ = 0;  // P
    int32_t min_count_ = 0;
    // Indexed by lag slot j = P - p, so that slot j of every array concerns period p = P - j and the
    // token p steps back is recent_[ring_position + j]: one contiguous, ascending window per step.
    std::vector<int32_t> recent_;       // (2P) the last P tokens written twice (ring slot s at s and s + P)
    std::vector<int32_t> run_by_slot_;  // (P) consecutive matches token[i] == token[i - p] ending now
    // (P) for p in range, the run that fires: max((min_count - 1) * p, min_loop_tokens - p), the run being
    // the loop's length less one copy; INT32_MAX outside the range.
    std::vector<int32_t> fire_at_run_;
    size_t ring_position_ = 0;  // tokens_observed_ mod P: where the next token is written
    int64_t tokens_observed_ = 0;
    std::optional<RepetitionEvent> detection_;
};

}  // namespace tempered
