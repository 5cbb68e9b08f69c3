// The MoE traffic series: each forward step the engine reports adds its expert bytes and one step, so
// bytes / steps is the mean expert traffic per step a dashboard shows.
#include <gtest/gtest.h>

#include <string>

#include "server/serving_metrics.h"

namespace tempered {
namespace {
namespace serving_metrics_expert_traffic_test {

double series_value(const ServingMetrics& metrics, const std::string& series) {
    const std::string text = metrics.render();
    const size_t at = text.find("\n" + series + " ");
    if (at == std::string::npos) return -1;
    return std::stod(text.substr(at + series.size() + 2));
}

TEST(ServingMetricsExpertTraffic, SumsBytesAndCountsSteps) {
    ServingMetrics metrics("ds2", "f16");
    metrics.on_expert_traffic(3'000'000);
    metrics.on_expert_traffic(5'000'000);
    EXPECT_EQ(series_value(metrics, "tempered:moe_expert_weight_bytes_total{model_name=\"ds2\"}"), 8e6);
    EXPECT_EQ(series_value(metrics, "tempered:moe_steps_total{model_name=\"ds2\"}"), 2);
}

}  // namespace serving_metrics_expert_traffic_test
}  // namespace
}  // namespace tempered
