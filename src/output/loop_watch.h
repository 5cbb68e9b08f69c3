// One choice's output watched for loops: the loop detector (repetition_detector.h) plus what a report of a
// loop needs from it: where the loop was seen, and how long it went on after that. The degeneration guard
// (engine/degeneration_guard.h) acts on what it sees; the output processor reports it for another engine's
// stream. Counts are in tokens: the detector is fed token ids.
#pragma once

#include <cstdint>
#include <optional>

#include "output/repetition_detector.h"

namespace tempered {

// One loop seen in a choice's output.
struct LoopSighting {
    int64_t detected_at_token = 0;  // index in the choice's output (0: its first generated token)
    int32_t period = 0;             // the repeated block's length in tokens
    int32_t repeats = 0;            // whole copies in a row: at detection, then as far as the loop went on
};

class LoopWatch {
public:
    explicit LoopWatch(const RepetitionDetectionParams& params) : detector_(params) {}

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

    RepetitionDetector detector_;
    std::optional<LoopSighting> first_loop_;
    std::optional<LoopSighting> loop_after_restart_;
    bool loop_running_ = false;  // the loop last seen is still going on, so its repeats still grow
    // Output tokens observed before watch_again(), so that indices count from the output's start.
    int64_t watched_before_ = 0;
};

}  // namespace tempered
