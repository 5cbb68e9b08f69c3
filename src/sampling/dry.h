// DRY ("Don't Repeat Yourself": p-e-w's design, as koboldcpp and llama.cpp run it), a stage after the
// repetition penalties. For each candidate token, the length of the longest suffix of the history that the
// candidate would extend into a repeat of an earlier sequence; a candidate whose length reaches
// allowed_length has its logit lowered by multiplier * base^(length - allowed_length). A sequence breaker
// cuts the suffix: nothing before the latest breaker counts. Known blind spot: with "\n" as a breaker it
// cannot see loops that span lines (the loop detector can).
//
// llama.cpp's rules, kept so its penalties and ours agree (tests/unit/sampling_dry_test.cpp):
//   - the history is the prompt and the output together, the last penalty_last_n tokens of it;
//   - off when multiplier is 0, base < 1, or penalty_last_n is 0; -1 is the whole history (llama-server's
//     old "context size"); nothing happens unless the window is longer than allowed_length;
//   - lengths count only tokens already in the history, and stop at the latest breaker;
//   - a token that is a breaker by itself is never penalized;
//   - the exponent is capped so that base^exponent stays a finite float.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "sampling/dry_breakers.h"

namespace tempered {

struct DryParams {
    float multiplier = 0.0f;  // 0: off
    float base = 1.75f;
    int32_t allowed_length = 2;
    int32_t penalty_last_n = -1;                  // -1: the whole history; 0: off
    std::shared_ptr<const DryBreakers> breakers;  // null: none

    bool active() const { return multiplier != 0.0f && base >= 1.0f && penalty_last_n != 0; }
};

// Buffers reused across calls, so that a warm step allocates nothing.
struct DryWorkspace {
    std::vector<int32_t> window;            // (penalty_last_n): the history DRY looks at
    std::vector<int32_t> reversed;          // (window): the window back to front
    std::vector<int32_t> match_length;      // (window): Z-function of `reversed`
    std::vector<int32_t> longest_by_token;  // (vocab): longest repeat a token would extend, -1 none
    std::vector<int32_t> touched;           // tokens whose entry above is set
};

void apply_dry(std::span<float> logits, const DryParams& params, std::span<const int32_t> prompt,
               std::span<const int32_t> output, DryWorkspace& workspace);

}  // namespace tempered
