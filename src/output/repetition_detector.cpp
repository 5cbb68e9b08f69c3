#include "output/repetition_detector.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

namespace tempered {

namespace {

// Fills the history before any token arrives; no vocabulary id or shape unit (loop_channel.h) is -1, so no
// comparison with a real one matches it and a period cannot count tokens the sequence does not have.
constexpr int32_t kNoToken = -1;

InvalidRepetitionParam field_error(std::string field, std::string rule) {
    return InvalidRepetitionParam{std::move(field), std::move(rule)};
}

}  // namespace

Result<RepetitionDetectionParams, InvalidRepetitionParam> validate_repetition_detection(
    RepetitionDetectionParams params) {
    if (params.max_pattern_size < 0) return field_error("max_pattern_size", "must be >= 0 (0 turns detection off)");
    if (params.min_pattern_size < 0) return field_error("min_pattern_size", "must be >= 0 (0 means 1)");
    if (params.max_pattern_size > kMaxRepetitionPatternSize) {
        return field_error("max_pattern_size", "must be <= " + std::to_string(kMaxRepetitionPatternSize));
    }
    if (params.min_loop_tokens < 0) return field_error("min_loop_tokens", "must be >= 0 (0: no minimum)");
    if (!(params.min_loop_share >= 0.0f && params.min_loop_share <= 1.0f))
        return field_error("min_loop_share", "must be between 0 and 1");
    if (params.min_pattern_size > params.max_pattern_size) {
        return field_error("min_pattern_size", "must be <= max_pattern_size");
    }
    if (!params.enabled()) return params;
    if (params.min_count < 2) return field_error("min_count", "must be >= 2 when max_pattern_size is set");
    params.min_pattern_size = std::max(params.min_pattern_size, 1);
    return params;
}

RepetitionDetector::RepetitionDetector(const RepetitionDetectionParams& params) {
    auto valid = validate_repetition_detection(params);
    if (!valid || !valid->enabled()) return;
    min_period_ = valid->min_pattern_size;
    max_period_ = valid->max_pattern_size;
    min_count_ = valid->min_count;

    const auto periods = static_cast<size_t>(max_period_);
    recent_.assign(2 * periods, kNoToken);
    run_by_slot_.assign(periods, 0);
    fire_at_run_.assign(periods, std::numeric_limits<int32_t>::max());
    for (int32_t period = min_period_; period <= max_period_; ++period) {
        // A huge min_count would overflow int32; clamped, the threshold stays unreachable instead of
        // wrapping negative and firing at once.
        const int64_t run = std::max(static_cast<int64_t>(min_count_ - 1) * period,
                                     static_cast<int64_t>(valid->min_loop_tokens) - period);
        fire_at_run_[static_cast<size_t>(max_period_ - period)] =
            static_cast<int32_t>(std::min<int64_t>(run, std::numeric_limits<int32_t>::max()));
    }
}

std::optional<RepetitionEvent> RepetitionDetector::observe(int32_t token) {
    if (!enabled()) {
        ++tokens_observed_;
        return std::nullopt;
    }
    const auto periods = static_cast<size_t>(max_period_);
    // earlier[j] is the token P - j steps back (or kNoToken): the ring slot of token n - p is
    // (n - p) mod P, stored at both s and s + P, and ring_position_ + P - p lies in [ring_position_,
    // ring_position_ + P) for every p in 1..P.
    const int32_t* earlier = recent_.data() + ring_position_;
    const int32_t* fire_at = fire_at_run_.data();
    int32_t* run = run_by_slot_.data();
    // One branch-free pass the compiler vectorises (a max, not a bool, so the reduction vectorises too):
    // a step almost never fires, so which period fired is only looked up when one did.
    int32_t closest = std::numeric_limits<int32_t>::min();
    for (size_t j = 0; j < periods; ++j) {
        run[j] = earlier[j] == token ? run[j] + 1 : 0;
        closest = std::max(closest, run[j] - fire_at[j]);
    }
    recent_[ring_position_] = token;
    recent_[ring_position_ + periods] = token;
    ring_position_ = ring_position_ + 1 == periods ? 0 : ring_position_ + 1;
    ++tokens_observed_;

    if (detection_ || closest < 0) return std::nullopt;
    detection_ = first_firing_period();
    return detection_;
}

std::optional<RepetitionEvent> RepetitionDetector::first_firing_period() const {
    // The smallest period is the highest slot.
    for (int32_t period = min_period_; period <= max_period_; ++period) {
        const auto slot = static_cast<size_t>(max_period_ - period);
        if (run_by_slot_[slot] < fire_at_run_[slot]) continue;
        return RepetitionEvent{tokens_observed_ - 1, period, current_repeats(period)};
    }
    return std::nullopt;
}

int32_t RepetitionDetector::current_repeats(int32_t period) const {
    if (period < 1 || period > max_period_ || tokens_observed_ < period) return 0;
    return run_by_slot_[static_cast<size_t>(max_period_ - period)] / period + 1;
}

void RepetitionDetector::reset() {
    std::fill(recent_.begin(), recent_.end(), kNoToken);
    std::fill(run_by_slot_.begin(), run_by_slot_.end(), 0);
    ring_position_ = 0;
    tokens_observed_ = 0;
    detection_.reset();
}

}  // namespace tempered
