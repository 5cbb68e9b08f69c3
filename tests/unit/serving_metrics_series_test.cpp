// Series ServingMetrics derives from the engine's reports, read back from its rendered text.
// The MoE traffic series: each forward step the engine reports adds its expert bytes and one step, so
// bytes / steps is the mean expert traffic per step a dashboard shows.
// The speculative decoding series under vLLM's names: a proposal of k drafts of which a are accepted adds one
// proposal, k draft tokens and a accepted ones, and one accepted token at each position 0..a-1 (a draft counts
// only when every earlier one was kept), so accepted-at-position / proposals is each position's rate.
#include <gtest/gtest.h>

#include <string>

#include "server/serving_metrics.h"
#include "serving_metrics_test_support.h"

namespace tempered {
namespace {
namespace serving_metrics_series_test {

using testing::series_value;

TEST(ServingMetricsExpertTraffic, SumsBytesAndCountsSteps) {
    ServingMetrics metrics("ds2", "f16");
    metrics.on_expert_traffic(3'000'000);
    metrics.on_expert_traffic(5'000'000);
    EXPECT_EQ(series_value(metrics, "tempered:moe_expert_weight_bytes_total{model_name=\"ds2\"}"), 8e6);
    EXPECT_EQ(series_value(metrics, "tempered:moe_steps_total{model_name=\"ds2\"}"), 2);
}

std::string per_position(int position) {
    return "vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name=\"m\",position=\"" +
           std::to_string(position) + "\"}";
}

TEST(ServingMetricsSpeculation, CountsProposalsTokensAndAcceptancePerPosition) {
    ServingMetrics metrics("m", "f16");
    metrics.on_speculation(4, 2);
    metrics.on_speculation(3, 3);
    metrics.on_speculation(2, 0);
    EXPECT_EQ(series_value(metrics, "vllm:spec_decode_num_drafts_total{model_name=\"m\"}"), 3);
    EXPECT_EQ(series_value(metrics, "vllm:spec_decode_num_draft_tokens_total{model_name=\"m\"}"), 9);
    EXPECT_EQ(series_value(metrics, "vllm:spec_decode_num_accepted_tokens_total{model_name=\"m\"}"), 5);
    EXPECT_EQ(series_value(metrics, per_position(0)), 2);
    EXPECT_EQ(series_value(metrics, per_position(1)), 2);
    EXPECT_EQ(series_value(metrics, per_position(2)), 1);
    EXPECT_EQ(series_value(metrics, per_position(3)), -1);  // no proposal kept a fourth draft
}

}  // namespace serving_metrics_series_test
}  // namespace
}  // namespace tempered
