// One choice's output watched for loops: its loop channels (loop_channel.h: exact tokens, and shapes) plus what a
// report of a loop needs from them: where the first loop was seen, which channel saw it, and how long it went on
// after that. The degeneration guard (engine/degeneration_guard.h) acts on what it sees; the output processor
// reports it for another engine's stream. Counts are in tokens.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "output/loop_channel.h"
#include "output/repetition_detector.h"

namespace tempered {

class LoopWatch {
public:
    // The tokens channel always; with params.shapes and the vocabulary's `shapes`, the numbers channel, and
    // the nesting channel too when the output is `structured` (under a grammar). Shape channels count a loop
    // only with more copies than the params ask for exact repeats (shape_loop_params).
    explicit LoopWatch(const RepetitionDetectionParams& params, std::shared_ptr<const TokenShapes> shapes = nullptr,
                       bool structured = false);

    enum class Seen { Nothing, FirstLoop, LoopAfterRestart };
    // Feeds one output token: a loop first seen with it (the first loop, or one after restart()), else
    // nothing; meanwhile the repeats of the loop last seen grow while it goes on.
    Seen observe(int32_t token);

    const std::optional<LoopSighting>& first_loop() const { return first_loop_; }
    const std::optional<LoopSighting>& loop_after_restart() const { return loop_after_restart_; }

    // The output changed course after its first loop (the guard resampled): a fresh look, the tokens before
    // not held against it; a loop seen from now on is a loop after restart, indexed from the output's start.
    void restart();
    // Starts over as if nothing had been seen (both loops forgotten); indices still count from the output's
    // start.
    void watch_again();

private:
    void follow(LoopSighting& loop);

    std::vector<LoopChannel> channels_;
    std::optional<LoopSighting> first_loop_;
    std::optional<LoopSighting> loop_after_restart_;
    bool looking_ = true;        // a sighting now is news: no loop seen since the start or the last restart
    size_t loop_channel_ = 0;    // the channel that saw the loop last seen
    bool loop_running_ = false;  // the loop last seen is still going on, so its repeats still grow
    int64_t observed_ = 0;       // output tokens observed, the first one's index 0
};

// Copies in a row a shape channel needs at least (tuned on tests/fixtures/guard/ordinary_answers.jsonl).
inline constexpr int32_t kNumbersMinCopies = 3;
inline constexpr int32_t kNumbersMinLoopUnits = 40;  // a list of 13 numbers ("[3, 1, 4, ...]") is no loop
inline constexpr int32_t kNestingMinCopies = 4;

// What a shape channel (numbers, nesting) needs to call a repeat a loop: a repeat of shapes is weaker evidence
// than a repeat of tokens (a table's rows have one shape), so it takes more copies.
RepetitionDetectionParams shape_loop_params(const RepetitionDetectionParams& params, LoopKind kind);

}  // namespace tempered
