// The routed-expert bytes a forward step reads (Model::last_expert_traffic), on the tiny deepseek2 MoE file
// of scripts/fixtures/make_deepseek2_models.py: one decode token reads exactly its top-k experts per MoE
// layer; 32 sequences decoding together read each distinct active expert once, not once per token. One
// expert's bytes come from the file's 3-D tensors, not from the code under test.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "model_run_support.h"
#include "model_test_support.h"
#include "models/moe_ffn.h"

namespace tempered {
namespace {
namespace model_expert_traffic_test {

std::filesystem::path moe_model_path() {
    const char* dir = std::getenv("TEMPERED_TINY_MODEL_DIR");
    const std::filesystem::path base =
        dir && *dir ? std::filesystem::path(dir) : std::filesystem::path(TEMPERED_SOURCE_DIR) / "build" / "tiny-models";
    return base / "ds2-moe-q8_0.gguf";
}

// One routed expert's gate + up + down bytes in layer `layer` of the file: each 3-D tensor / expert_count.
int64_t file_expert_bytes(const GgufFile& file, int64_t layer, int64_t expert_count) {
    int64_t bytes = 0;
    for (const char* part : {"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"}) {
        const GgufTensorInfo* tensor = file.tensor("blk." + std::to_string(layer) + "." + part + ".weight");
        EXPECT_NE(tensor, nullptr) << part;
        if (tensor) bytes += static_cast<int64_t>(tensor->size_bytes) / expert_count;
    }
    return bytes;
}

class ExpertTrafficTest : public ::testing::Test {
protected:
    void SetUp() override {
        const std::filesystem::path path = moe_model_path();
        if (!std::filesystem::exists(path)) {
            if (testing::models_required()) FAIL() << "missing " << path;
            GTEST_SKIP() << path << " not found: scripts/fixtures/make_deepseek2_models.py writes it";
        }
        auto loaded = testing::load_test_model(path, 64 * 40);
        ASSERT_TRUE(loaded.ok()) << loaded.error().message;
        loaded_ = std::move(loaded.value());
        const ModelConfig& config = loaded_.model->config();
        ASSERT_TRUE(config.experts.has_value());
        moe_layers_ = config.layer_count - config.experts->leading_dense_layers;
        expert_bytes_ =
            file_expert_bytes(*loaded_.file, config.experts->leading_dense_layers, config.experts->expert_count);
    }

    // One decode step of `sequences` sequences, each with a 4-token prompt already in the cache.
    ExpertTraffic decode_step(int32_t sequences) {
        std::mt19937 rng(7);
        std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(loaded_.model->config().vocab_size - 1));
        for (int32_t s = 0; s < sequences; ++s)
            testing::forward_tokens(*loaded_.model, *loaded_.cache, {token(rng), token(rng), token(rng), token(rng)}, 0,
                                    s);
        Batch batch;
        for (int32_t s = 0; s < sequences; ++s) {
            EXPECT_TRUE(loaded_.cache->ensure_capacity(s, 5));
            batch.add(token(rng), 4, s, true);
        }
        std::vector<float> logits(static_cast<size_t>(sequences * loaded_.model->config().vocab_size));
        const Status status = loaded_.model->forward(batch, *loaded_.cache, logits.data());
        EXPECT_TRUE(status.ok()) << status.error().message;
        return loaded_.model->last_expert_traffic();
    }

    testing::TestModel loaded_;
    int64_t moe_layers_ = 0;
    int64_t expert_bytes_ = 0;
};

TEST_F(ExpertTrafficTest, OneDecodeTokenReadsItsTopKExpertsInEachMoeLayer) {
    const int64_t top_k = loaded_.model->config().experts->experts_per_token;
    const ExpertTraffic traffic = decode_step(1);
    EXPECT_EQ(traffic.active_experts, top_k * moe_layers_);
    EXPECT_EQ(traffic.weight_bytes, top_k * moe_layers_ * expert_bytes_);
    EXPECT_EQ(traffic.read_once_bytes, traffic.weight_bytes);
}

// 32 tokens x top-k choices per layer land on at most expert_count experts: the step reads exactly the
// distinct ones, once each.
TEST_F(ExpertTrafficTest, ThirtyTwoSequencesReadEachActiveExpertOnce) {
    const MoeConfig& moe = *loaded_.model->config().experts;
    const ExpertTraffic traffic = decode_step(32);
    EXPECT_EQ(traffic.weight_bytes, traffic.read_once_bytes);
    EXPECT_EQ(traffic.weight_bytes, traffic.active_experts * expert_bytes_);
    EXPECT_LE(traffic.active_experts, moe.expert_count * moe_layers_);
    EXPECT_GE(traffic.active_experts, moe.experts_per_token * moe_layers_);
    EXPECT_LT(traffic.weight_bytes, 32 * moe.experts_per_token * moe_layers_ * expert_bytes_);
}

TEST(DistinctExperts, CountsEachExpertOnceWhateverItsWeight) {
    const std::vector<ExpertChoice> choices = {{3, 0.5f}, {1, 0.2f}, {3, 0.1f}, {0, 0.9f}, {1, 0.3f}};
    EXPECT_EQ(distinct_experts(choices, 8), 3);
    EXPECT_EQ(distinct_experts({}, 8), 0);
}

}  // namespace model_expert_traffic_test
}  // namespace
}  // namespace tempered
