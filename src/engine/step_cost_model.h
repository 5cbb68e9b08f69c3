// A running fit of how long a forward step takes against how many tokens it holds: seconds ~ fixed +
// per_token * tokens. The fixed part is reading the weights (batch-1 decode is memory-bound), the per-token
// part the arithmetic each token adds. The scheduler asks it whether verifying more draft positions pays
// (speculative/draft_policy.h): at batch 1 they cost almost nothing, in a large batch each costs as much as
// a token of any other sequence.
//
// Least squares with exponential forgetting, so the fit follows the load as it changes (other processes on
// the machine, longer contexts). Fed only the steps it models (the engine feeds decode-only steps).
#pragma once

#include <cstdint>
#include <optional>

namespace tempered {

struct StepCost {
    double fixed_seconds = 0;      // >= 0
    double per_token_seconds = 0;  // >= 0
};

class StepCostModel {
public:
    // Each new step weighs 1, the one before `forgetting`, the one before that forgetting^2, ...
    explicit StepCostModel(double forgetting = 0.97) : forgetting_(forgetting) {}

    void observe(int64_t tokens, double seconds);
    // None until the steps seen differ enough in size to separate the two parts; after that the last good
    // fit while they do not (a run of same-sized steps says nothing about the slope).
    std::optional<StepCost> fit() const { return fit_; }

private:
    double forgetting_;
    double weight_ = 0, sum_x_ = 0, sum_y_ = 0, sum_xx_ = 0, sum_xy_ = 0;
    std::optional<StepCost> fit_;
};

}  // namespace tempered
