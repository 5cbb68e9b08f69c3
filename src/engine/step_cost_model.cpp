#include "engine/step_cost_model.h"

#include <algorithm>

namespace tempered {

namespace {
// The variance of the step sizes (tokens^2) below which the slope is left as it was: steps of 1 and 2
// tokens in equal numbers have variance 0.25.
constexpr double kMinimumSizeVariance = 0.2;
}  // namespace

void StepCostModel::observe(int64_t tokens, double seconds) {
    const auto x = static_cast<double>(tokens);
    weight_ = weight_ * forgetting_ + 1.0;
    sum_x_ = sum_x_ * forgetting_ + x;
    sum_y_ = sum_y_ * forgetting_ + seconds;
    sum_xx_ = sum_xx_ * forgetting_ + x * x;
    sum_xy_ = sum_xy_ * forgetting_ + x * seconds;
    const double mean_x = sum_x_ / weight_, mean_y = sum_y_ / weight_;
    const double variance = sum_xx_ / weight_ - mean_x * mean_x;
    if (variance < kMinimumSizeVariance) return;
    const double covariance = sum_xy_ / weight_ - mean_x * mean_y;
    const double per_token = std::max(0.0, covariance / variance);
    fit_ = StepCost{std::max(0.0, mean_y - per_token * mean_x), per_token};
}

}  // namespace tempered
