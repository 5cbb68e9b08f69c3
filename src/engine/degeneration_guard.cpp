#include "engine/degeneration_guard.h"

#include <algorithm>

#include "engine/engine_observer.h"
#include "engine/sequence.h"
#include "sampling/next_token.h"

namespace tempered {

const char* degeneration_action_name(DegenerationAction action) {
    switch (action) {
        case DegenerationAction::Off: return "off";
        case DegenerationAction::Flag: return "flag";
        case DegenerationAction::Stop: return "stop";
        case DegenerationAction::Resample: return "resample";
    }
    return "off";
}

std::optional<DegenerationAction> degeneration_action_from_name(std::string_view name) {
    for (auto action :
         {DegenerationAction::Off, DegenerationAction::Flag, DegenerationAction::Stop, DegenerationAction::Resample})
        if (name == degeneration_action_name(action)) return action;
    return std::nullopt;
}

const char* degeneration_phase_name(DegenerationPhase phase) {
    return phase == DegenerationPhase::Reasoning ? "reasoning" : "content";
}

SamplingParams FallbackSampling::applied_to(const SamplingParams& request) const {
    SamplingParams out = request;
    if (temperature) out.temperature = *temperature;
    if (top_p) out.top_p = *top_p;
    if (top_k) out.top_k = *top_k;
    if (min_p) out.min_p = *min_p;
    return out;
}

DegenerationGuard default_degeneration_guard() {
    DegenerationGuard guard;
    guard.action = DegenerationAction::Flag;
    guard.detector.min_pattern_size = 1;
    guard.detector.max_pattern_size = 128;
    guard.detector.min_count = 3;
    guard.detector.min_loop_tokens = 24;
    guard.detector.shapes = true;
    guard.detector.min_loop_share = 0.2f;
    return guard;
}

SequenceGuard::Outcome SequenceGuard::observe(int32_t token, const Step& step) {
    Outcome outcome;
    if (!watch_) {
        if (!step.guard.active()) return outcome;
        watch_.emplace(step.guard.detector, step.guard.shapes, step.structured);
    }
    const LoopWatch::Seen seen = watch_->observe(token);
    if (report_) {  // the loops as far as they went on
        report_->loop = *watch_->first_loop();
        report_->after_resample = watch_->loop_after_restart();
    }
    if (seen == LoopWatch::Seen::FirstLoop) on_first_loop(step, outcome);
    if (seen == LoopWatch::Seen::LoopAfterRestart) on_loop_after_resample(outcome);
    // The finishing delta carries the report again, with the repeats the loop reached.
    if (step.finishing && report_ && !outcome.send) outcome.send = report_;
    return outcome;
}

void SequenceGuard::watch_again() {
    if (watch_) watch_->watch_again();
    report_.reset();
}

void SequenceGuard::on_first_loop(const Step& step, Outcome& outcome) {
    DegenerationReport report;
    report.loop = *watch_->first_loop();
    report.phase = step.phase;
    report.action = step.guard.action;
    if (step.guard.action == DegenerationAction::Stop) outcome.stop_choice = !step.finishing;
    if (step.guard.action == DegenerationAction::Resample) {
        sampling_ = step.guard.fallback.applied_to(step.request_sampling);
        dry_ = step.guard.fallback.dry;
        report.resampled = SamplingSwitch{step.request_sampling, step.request_dry, *sampling_, *dry_};
        // The new sampling gets a fresh look; the tokens drawn under the old one are not held against it.
        watch_->restart();
    }
    report_ = report;
    outcome.detected = NewLoop{report.action, report.phase, report.loop.period};
    outcome.send = report_;
}

// A later loop in the resampled output: only flagged.
void SequenceGuard::on_loop_after_resample(Outcome& outcome) {
    report_->after_resample = watch_->loop_after_restart();
    outcome.detected = NewLoop{DegenerationAction::Flag, report_->phase, report_->after_resample->period};
    outcome.send = report_;
}

namespace {

const DryParams& request_dry(const GenerationOptions& options) { return options.dry; }

DegenerationPhase phase_of(const Sequence& sequence) {
    const bool reasoning = sequence.reasoning && sequence.reasoning->in_reasoning();
    return reasoning ? DegenerationPhase::Reasoning : DegenerationPhase::Content;
}

}  // namespace

bool guard_generated_token(const GenerationOptions& options, Sequence& sequence, int32_t token, ChoiceDelta& delta,
                           EngineObserver* observer) {
    const DegenerationPhase phase = phase_of(sequence);
    const SequenceGuard::Step step{options.guard, options.sampling,  request_dry(options),
                                   phase,         sequence.finished, sequence.constraint.has_value()};
    SequenceGuard::Outcome outcome = sequence.guard.observe(token, step);
    if (outcome.detected && observer)
        observer->on_degeneration(outcome.detected->action, outcome.detected->phase, outcome.detected->period);
    if (outcome.send) delta.degeneration = std::move(outcome.send);
    // A loop inside reasoning that would stop (or resample) the choice ends the reasoning by force instead,
    // so the answer still comes; a flag only reports it.
    const bool acts = outcome.detected && outcome.detected->action != DegenerationAction::Flag;
    if (acts && phase == DegenerationPhase::Reasoning) {
        sequence.reasoning->force_end(ForcedEnd::Loop);
        sequence.guard.watch_again();
        return false;
    }
    return outcome.stop_choice;
}

const SamplingParams& sequence_sampling(const GenerationOptions& options, const Sequence& sequence) {
    return sequence.guard.sampling(options.sampling);
}

const DryParams& sequence_dry(const GenerationOptions& options, const Sequence& sequence) {
    return sequence.guard.dry(request_dry(options));
}

}  // namespace tempered
