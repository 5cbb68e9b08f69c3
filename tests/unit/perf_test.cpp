// The STREAM triad (its arithmetic and how bytes are counted, not its speed) and the weight bytes a
// decode step reads, on written-in-memory GGUF files with and without tied embeddings.
#include <gtest/gtest.h>

#include "../support/gguf_writer.h"
#include "perf/memory_bandwidth.h"
#include "perf/weight_traffic.h"

namespace tempered {
namespace {

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

}  // namespace
}  // namespace tempered
