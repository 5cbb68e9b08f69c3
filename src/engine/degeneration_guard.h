// The degeneration guard: every choice's output watched for loops as it is generated (one LoopWatch from
// src/output per sequence, fed each generated token, never the prompt), and what happens when one is seen. The actions:
//   - flag: nothing changes; the choice reports the loop (and how long it went on) and the metrics count it;
//   - stop: the choice ends there with FinishReason::Repetition, as vLLM's repetition_detection does;
//   - resample: the rest of that choice is drawn with the guard's fallback sampling (DRY on), and the
//     report says what it replaced. The detector starts over; a second loop is only flagged.
//   - off: no detection.
// Inside a reasoning model's <think>, stop and resample end the reasoning by force instead (reasoning_phase.h,
// forced_end "loop"), so the answer still comes; flag only reports.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "output/loop_watch.h"
#include "output/repetition_detector.h"
#include "output/token_shapes.h"
#include "sampling/dry.h"
#include "sampling/sampler.h"

namespace tempered {

class EngineObserver;
struct ChoiceDelta;
struct GenerationOptions;
struct Sequence;

enum class DegenerationAction { Off, Flag, Stop, Resample };
const char* degeneration_action_name(DegenerationAction action);
std::optional<DegenerationAction> degeneration_action_from_name(std::string_view name);

// Where in the output the loop was: the answer, or a reasoning model's thinking.
enum class DegenerationPhase { Content, Reasoning };
const char* degeneration_phase_name(DegenerationPhase phase);

// llama.cpp's DRY values (common/common.h; off there unless dry_multiplier is set), as the fallback turns
// them on. penalty_last_n -1, the whole history, is llama.cpp's default too, and needed here: the loop the
// guard just saw may be min_count copies of a 64-token block, longer than a 64-token window could match.
inline constexpr float kFallbackDryMultiplier = 0.8f;
inline constexpr float kFallbackDryBase = 1.75f;
inline constexpr int32_t kFallbackDryAllowedLength = 2;
inline constexpr int32_t kFallbackDryPenaltyLastN = -1;
// No sequence breakers, unlike llama.cpp's default ("\n", ":", "\"", "*"): the guard resamples because it saw a
// loop, and the loops it sees span lines and quotes (a list item repeated line after line), exactly DRY's
// blind spot with those breakers. Measured on the seed scenario (bench/results/seed_scenario-*, t0-resample):
// the repeated-4-gram share after the switch fell from 0.210 to 0.089 on SmolLM2 and from 0.298 to 0.152 on
// Qwen2.5-Coder (ordinary answers: 0.155 and 0.111) when the breakers went.
inline const std::vector<std::string> kFallbackDryBreakers = {};

// What `resample` switches a looping choice to. An empty value keeps the request's; logit bias is always
// the request's.
struct FallbackSampling {
    std::optional<float> temperature = 0.7f;
    std::optional<float> top_p;
    std::optional<int32_t> top_k;
    std::optional<float> min_p;
    DryParams dry{kFallbackDryMultiplier, kFallbackDryBase, kFallbackDryAllowedLength, kFallbackDryPenaltyLastN,
                  nullptr};

    // `request` with the fallback's values in place of its own.
    SamplingParams applied_to(const SamplingParams& request) const;
};

// The guard one request runs under (GenerationOptions::guard): the server's, or the request's own
// repetition_detection with action stop. The engine's default is off.
struct DegenerationGuard {
    DegenerationAction action = DegenerationAction::Off;
    RepetitionDetectionParams detector;  // validated (validate_repetition_detection)
    FallbackSampling fallback;
    // The vocabulary's shapes for detector.shapes (set once per model at start-up); without them only exact
    // repeats of tokens are seen.
    std::shared_ptr<const TokenShapes> shapes;

    bool active() const { return action != DegenerationAction::Off && detector.enabled(); }
};

// The server's guard when the operator sets nothing: flag, periods 1..128, at least 3 copies covering at least
// 24 tokens and a fifth of the output's last 512, shapes on (numbers and nesting need more: output/loop_watch.h).
// "la Femme, " (4 tokens) is caught at its 6th copy, a 10-token sentence at its 3rd; a run of one token needs 24,
// so a table rule or an indent never fires. tests/unit/engine_guard_corpora_test.cpp holds it to 580 ordinary
// answers of both real models (none flagged) and 24 looping ones (all flagged).
DegenerationGuard default_degeneration_guard();

// What resample changed: the values before (the request's) and after.
struct SamplingSwitch {
    SamplingParams replaced_sampling;
    DryParams replaced_dry;
    SamplingParams sampling;
    DryParams dry;
};

// A choice's loop report, sent on the delta where the loop is detected and again, with its final repeats,
// on the choice's finishing delta.
struct DegenerationReport {
    LoopSighting loop;  // the first loop, the one the action was taken on
    DegenerationPhase phase = DegenerationPhase::Content;
    DegenerationAction action = DegenerationAction::Flag;
    std::optional<SamplingSwitch> resampled;     // action resample
    std::optional<LoopSighting> after_resample;  // a later loop in the resampled output (only flagged)
};

// One sequence's guard: its loop watch (output/loop_watch.h, started with the request's guard at the first
// generated token), the report so far and, after a resample, the sampling it draws with instead of the
// request's.
class SequenceGuard {
public:
    // The sampling (and DRY) to draw the next token with: the request's, or the fallback after a resample.
    const SamplingParams& sampling(const SamplingParams& request) const { return sampling_ ? *sampling_ : request; }
    const DryParams& dry(const DryParams& request) const { return dry_ ? *dry_ : request; }
    const std::optional<DegenerationReport>& report() const { return report_; }

    struct Step {
        const DegenerationGuard& guard;
        const SamplingParams& request_sampling;
        const DryParams& request_dry;
        DegenerationPhase phase = DegenerationPhase::Content;
        bool finishing = false;   // the token already ends the choice (stop string, length, end of generation)
        bool structured = false;  // the choice is under a grammar: its JSON nesting is watched too
    };
    // A loop first seen with this token, as the metrics count it.
    struct NewLoop {
        DegenerationAction action = DegenerationAction::Flag;  // flag for a loop after a resample
        DegenerationPhase phase = DegenerationPhase::Content;
        int32_t period = 0;
    };
    struct Outcome {
        std::optional<NewLoop> detected;
        bool stop_choice = false;                // action stop: end the choice here with FinishReason::Repetition
        std::optional<DegenerationReport> send;  // the report to put on this token's delta
    };
    // Feeds one generated token.
    Outcome observe(int32_t token, const Step& step);
    // Starts over as if nothing had been seen, keeping any resampled sampling: after a loop inside reasoning
    // ended the reasoning by force, the answer gets a watch of its own (its loop is a first loop again).
    void watch_again();

private:
    void on_first_loop(const Step& step, Outcome& outcome);
    void on_loop_after_resample(Outcome& outcome);

    std::optional<LoopWatch> watch_;
    std::optional<DegenerationReport> report_;  // its loops are the watch's, copied after each token
    std::optional<SamplingParams> sampling_;
    std::optional<DryParams> dry_;
};

// The hook postprocess calls once a generated token is in the sequence and its text appended: feeds the
// sequence's guard, puts any report on `delta`, tells `observer` (may be null) of a new loop. Returns
// whether the guard ends the choice here (action stop); the caller then finishes it with
// FinishReason::Repetition.
bool guard_generated_token(const GenerationOptions& options, Sequence& sequence, int32_t token, ChoiceDelta& delta,
                           EngineObserver* observer);

// What the sequence draws its next token with: the request's sampling and DRY, or the fallback's once the
// guard resampled it.
const SamplingParams& sequence_sampling(const GenerationOptions& options, const Sequence& sequence);
const DryParams& sequence_dry(const GenerationOptions& options, const Sequence& sequence);

}  // namespace tempered
