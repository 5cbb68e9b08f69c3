// The STREAM triad (its arithmetic and how bytes are counted, not its speed) and the weight bytes a
// decode step reads, on written-in-memory GGUF files with and without tied embeddings.
#include <gtest/gtest.h>

#include "../support/gguf_writer.h"
#include "perf/memory_bandwidth.h"
#include "perf/weight_traffic.h"

namespace tempered {
namespace {
namespace perf_test {

using testing::GgufTensorSpec;
using testing::GgufWriter;

constexpr uint32_t kF32 = 0;

GgufTensorSpec f32_tensor(const std::string& name, uint64_t cols, uint64_t rows) {
    return {name, {cols, rows}, kF32, std::vector<uint8_t>(cols * rows * 4, 0), std::nullopt};
}

TEST(Triad, CountsTwentyFourBytesPerElementAndTimesEveryRun) {
    ThreadPool pool(3);
    auto result = run_triad(pool, TriadOptions{1000, 4});
    ASSERT_TRUE(result.ok()) << result.error().message;  // ok also means every a(i) was checked
    EXPECT_EQ(result->elements_per_array, 1000);
    EXPECT_EQ(result->threads, 3);
    EXPECT_EQ(result->bytes_per_run, 24000);
    ASSERT_EQ(result->seconds.size(), 4u);
    for (double s : result->seconds) EXPECT_GT(s, 0.0);
    EXPECT_GE(result->best_gb_per_second(), result->mean_gb_per_second());
}

TEST(Triad, RefusesFewerElementsThanThreads) {
    ThreadPool pool(4);
    EXPECT_FALSE(run_triad(pool, TriadOptions{3, 1}).ok());
    EXPECT_FALSE(run_triad(pool, TriadOptions{100, 0}).ok());
}

TEST(WeightTraffic, TiedEmbeddingsReadTheWholeTable) {
    const auto bytes = GgufWriter()
                           .tensor(f32_tensor("token_embd.weight", 8, 100))  // 3200 bytes
                           .tensor(f32_tensor("blk.0.attn_q.weight", 8, 8))  // 256
                           .tensor(f32_tensor("output_norm.weight", 8, 1))   // 32
                           .bytes();
    auto file = GgufFile::parse(bytes);
    ASSERT_TRUE(file.ok()) << file.error().message;
    const WeightTraffic traffic = weight_traffic(*file);
    EXPECT_TRUE(traffic.tied_embeddings);
    EXPECT_EQ(traffic.embedding_table_bytes, 3200u);
    EXPECT_EQ(traffic.tensor_bytes, 3488u);
    EXPECT_EQ(traffic.bytes_per_token, 3488u);
}

TEST(WeightTraffic, AnUntiedTableCostsOneRowPerToken) {
    const auto bytes = GgufWriter()
                           .tensor(f32_tensor("token_embd.weight", 8, 100))  // 3200 bytes, rows of 32
                           .tensor(f32_tensor("blk.0.attn_q.weight", 8, 8))  // 256
                           .tensor(f32_tensor("output.weight", 8, 100))      // 3200
                           .bytes();
    auto file = GgufFile::parse(bytes);
    ASSERT_TRUE(file.ok()) << file.error().message;
    const WeightTraffic traffic = weight_traffic(*file);
    EXPECT_FALSE(traffic.tied_embeddings);
    EXPECT_EQ(traffic.tensor_bytes, 6656u);
    EXPECT_EQ(traffic.bytes_per_token, 32u + 256u + 3200u);
}

// A mixture of experts reads only the routed experts a token uses (2 of 8 here) of the *_exps tensors;
// shared experts, router, dense layers and attention count whole.
TEST(WeightTraffic, AMixtureOfExpertsCountsOnlyTheActiveExperts) {
    GgufTensorSpec gate_exps{"blk.1.ffn_gate_exps.weight", {8, 4, 8}, kF32, std::vector<uint8_t>(8 * 4 * 8 * 4), {}};
    GgufTensorSpec up_exps{"blk.1.ffn_up_exps.weight", {8, 4, 8}, kF32, std::vector<uint8_t>(8 * 4 * 8 * 4), {}};
    GgufTensorSpec down_exps{"blk.1.ffn_down_exps.weight", {4, 8, 8}, kF32, std::vector<uint8_t>(4 * 8 * 8 * 4), {}};
    const auto bytes = GgufWriter()
                           .string("general.architecture", "deepseek2")
                           .u32("deepseek2.expert_count", 8)
                           .u32("deepseek2.expert_used_count", 2)
                           .tensor(f32_tensor("token_embd.weight", 8, 100))        // 3200 bytes, rows of 32
                           .tensor(f32_tensor("output.weight", 8, 100))            // 3200
                           .tensor(f32_tensor("blk.0.ffn_gate.weight", 8, 16))     // 512: a dense first layer
                           .tensor(f32_tensor("blk.1.attn_q.weight", 8, 8))        // 256
                           .tensor(f32_tensor("blk.1.ffn_gate_inp.weight", 8, 8))  // 256: the router
                           .tensor(f32_tensor("blk.1.ffn_up_shexp.weight", 8, 4))  // 128: a shared expert
                           .tensor(std::move(gate_exps))                           // 1024, 128 per expert
                           .tensor(std::move(up_exps))                             // 1024
                           .tensor(std::move(down_exps))                           // 1024
                           .bytes();
    auto file = GgufFile::parse(bytes);
    ASSERT_TRUE(file.ok()) << file.error().message;
    const WeightTraffic traffic = weight_traffic(*file);
    EXPECT_EQ(traffic.expert_count, 8);
    EXPECT_EQ(traffic.experts_per_token, 2);
    EXPECT_EQ(traffic.routed_expert_bytes, 3072u);
    EXPECT_EQ(traffic.tensor_bytes, 3200u + 3200u + 512u + 256u + 256u + 128u + 3072u);
    EXPECT_EQ(traffic.bytes_per_token, 32u + 3200u + 512u + 256u + 256u + 128u + 3u * 2u * 128u);
}

TEST(WeightTraffic, ADenseModelHasNoExpertShare) {
    const auto bytes = GgufWriter()
                           .string("general.architecture", "llama")
                           .tensor(f32_tensor("token_embd.weight", 8, 100))
                           .tensor(f32_tensor("blk.0.ffn_gate.weight", 8, 16))
                           .bytes();
    auto file = GgufFile::parse(bytes);
    ASSERT_TRUE(file.ok()) << file.error().message;
    const WeightTraffic traffic = weight_traffic(*file);
    EXPECT_EQ(traffic.expert_count, 0);
    EXPECT_EQ(traffic.routed_expert_bytes, 0u);
    EXPECT_EQ(traffic.bytes_per_token, 3200u + 512u);
}

}  // namespace perf_test
}  // namespace
}  // namespace tempered
