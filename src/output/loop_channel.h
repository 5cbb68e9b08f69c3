// One way of looking at a choice's output for loops: a repetition detector (repetition_detector.h) fed units
// made from the generated tokens. Three kinds:
//   - tokens:  the token ids themselves: a loop is a block of tokens repeated exactly (`</div></div></div>`);
//   - numbers: every number (a run of digit tokens, with the whitespace before it) is one unit, whatever its
//              digits, so a numbered list going round ("73. to be\n74. to be\n...") repeats too;
//   - nesting: under a grammar, the answer's JSON structure one character at a time, every string's contents
//              one unit, every number and every word (true, null) one unit, whitespace outside strings left out; a
//              repeat counts only when each copy opens more than it closes, so names nesting forever (`{"name":
//              "Alice", "children": [{"name": "Bob", "children": [...`) is a loop and an array of records is not.
// The detector counts units; what a channel reports is in tokens (the period: the tokens its last copy took).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "output/repetition_detector.h"
#include "output/token_shapes.h"

namespace tempered {

enum class LoopKind { Tokens, Numbers, Nesting };
const char* loop_kind_name(LoopKind kind);

// One loop seen in a choice's output.
struct LoopSighting {
    int64_t detected_at_token = 0;  // index in the choice's output (0: its first generated token)
    int32_t period = 0;             // the repeated block's length in tokens (its last copy's)
    int32_t repeats = 0;            // whole copies in a row: at detection, then as far as the loop went on
    LoopKind kind = LoopKind::Tokens;
};

class LoopChannel {
public:
    // `shapes` is needed by the numbers and nesting kinds (a channel without it never fires).
    LoopChannel(LoopKind kind, const RepetitionDetectionParams& params, std::shared_ptr<const TokenShapes> shapes);

    // Feeds the generated token at `index` of the output: the loop first seen with it, if any: a repeat with the
    // copies the params ask for that also covers their min_loop_share of the recent output (a repeat that does
    // not yet is followed until it does, or forgotten when it breaks first).
    std::optional<LoopSighting> observe(int32_t token, int64_t index);
    // Whole copies of the block of the loop last seen that end at the last unit (see
    // RepetitionDetector::current_repeats): how far that loop went on.
    int32_t current_repeats() const;
    // Forgets the units seen and the loop: a fresh look from the next token, the text read on (the output
    // changed course, it did not start again).
    void reset();
    // As reset(), and the text starts anew too (a reasoning model's answer after its thinking).
    void start_over();

private:
    void push_unit(int32_t unit, int64_t index, std::optional<LoopSighting>& seen);
    void push_json_bytes(int32_t token, int64_t index, std::optional<LoopSighting>& seen);
    bool opens_more_than_it_closes(int32_t period) const;
    std::optional<LoopSighting> follow_candidate(int64_t index);

    LoopKind kind_;
    std::shared_ptr<const TokenShapes> shapes_;
    RepetitionDetector detector_;
    float min_loop_share_ = 0.0f;
    int32_t unit_period_ = 0;  // of the loop last seen, in units
    // A repeat the detector saw that does not cover min_loop_share yet; `reported_` once it did.
    std::optional<LoopSighting> candidate_;
    bool reported_ = false;
    // The last max_pattern_size + 1 units' token index and JSON depth (nesting), by unit count mod size.
    std::vector<int64_t> unit_token_;
    std::vector<int32_t> unit_depth_;
    int64_t units_ = 0;
    // numbers: the previous token was a number; nesting: the JSON reader's state.
    bool after_number_ = false;
    bool in_string_ = false;
    bool escaped_ = false;
    int32_t last_symbol_ = -1;
    int32_t depth_ = 0;
};

}  // namespace tempered
