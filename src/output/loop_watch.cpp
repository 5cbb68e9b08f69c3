#include "output/loop_watch.h"

namespace tempered {

LoopWatch::Seen LoopWatch::observe(int32_t token) {
    const std::optional<RepetitionEvent> event = detector_.observe(token);
    if (event && !first_loop_) {
        first_loop_ = LoopSighting{watched_before_ + event->detected_at_token, event->period, event->repeats};
        loop_running_ = true;
        return Seen::FirstLoop;
    }
    if (event) {
        // Only restart() resets the detector, so a second event always follows one; its index counts from
        // the output's start like the first's.
        const int64_t restarted_at = first_loop_->detected_at_token + 1;
        loop_after_restart_ = LoopSighting{restarted_at + event->detected_at_token, event->period, event->repeats};
        loop_running_ = true;
        return Seen::LoopAfterRestart;
    }
    if (loop_running_ && first_loop_) follow(loop_after_restart_ ? *loop_after_restart_ : *first_loop_);
    return Seen::Nothing;
}

void LoopWatch::restart() {
    detector_.reset();
    loop_running_ = false;
}

void LoopWatch::watch_again() {
    watched_before_ += detector_.tokens_observed();
    detector_.reset();
    first_loop_.reset();
    loop_after_restart_.reset();
    loop_running_ = false;
}

void LoopWatch::follow(LoopSighting& loop) {
    const int32_t repeats = detector_.current_repeats(loop.period);
    if (repeats < loop.repeats) {
        loop_running_ = false;  // broken: a later run of the same period is another matter
        return;
    }
    loop.repeats = repeats;
}

}  // namespace tempered
