#include "output/loop_watch.h"

#include <algorithm>

namespace tempered {

RepetitionDetectionParams shape_loop_params(const RepetitionDetectionParams& params, LoopKind kind) {
    RepetitionDetectionParams shaped = params;
    const bool nesting = kind == LoopKind::Nesting;
    shaped.min_count = std::max(params.min_count, nesting ? kNestingMinCopies : kNumbersMinCopies);
    if (!nesting) shaped.min_loop_tokens = std::max(params.min_loop_tokens, kNumbersMinLoopUnits);
    return shaped;
}

LoopWatch::LoopWatch(const RepetitionDetectionParams& params, std::shared_ptr<const TokenShapes> shapes,
                     bool structured) {
    channels_.emplace_back(LoopKind::Tokens, params, nullptr);
    if (!params.shapes || !shapes) return;
    channels_.emplace_back(LoopKind::Numbers, shape_loop_params(params, LoopKind::Numbers), shapes);
    if (structured) channels_.emplace_back(LoopKind::Nesting, shape_loop_params(params, LoopKind::Nesting), shapes);
}

LoopWatch::Seen LoopWatch::observe(int32_t token) {
    const int64_t index = observed_++;
    std::optional<LoopSighting> seen;
    for (size_t c = 0; c < channels_.size(); ++c) {
        auto sighting = channels_[c].observe(token, index);
        if (sighting && !seen && looking_) {
            seen = sighting;
            loop_channel_ = c;
        }
    }
    if (seen) {
        // Until restart(), the other channels seeing the same loop later is not news.
        looking_ = false;
        loop_running_ = true;
        if (!first_loop_) {
            first_loop_ = seen;
            return Seen::FirstLoop;
        }
        loop_after_restart_ = seen;
        return Seen::LoopAfterRestart;
    }
    if (loop_running_ && first_loop_) follow(loop_after_restart_ ? *loop_after_restart_ : *first_loop_);
    return Seen::Nothing;
}

void LoopWatch::restart() {
    for (LoopChannel& channel : channels_) channel.reset();
    looking_ = true;
    loop_running_ = false;
}

void LoopWatch::watch_again() {
    for (LoopChannel& channel : channels_) channel.start_over();
    first_loop_.reset();
    loop_after_restart_.reset();
    looking_ = true;
    loop_running_ = false;
}

void LoopWatch::follow(LoopSighting& loop) {
    const int32_t repeats = channels_[loop_channel_].current_repeats();
    if (repeats < loop.repeats) {
        loop_running_ = false;  // broken: a later run of the same period is another matter
        return;
    }
    loop.repeats = repeats;
}

}  // namespace tempered
