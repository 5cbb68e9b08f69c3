// The MoE feed-forward block batched by expert against a plain per-token reference (dequantized weights,
// double loops), on a random small deepseek2-style layer written into an in-memory GGUF: F32 and Q8_0
// experts, file layout and packed; the expert bytes counter; the loader's shape checks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <set>

#include "../support/gguf_writer.h"
#include "core/aligned_buffer.h"
#include "kernel_test_support.h"
#include "kernels/cpu/dequantize.h"
#include "kernels/cpu/packed_weights.h"
#include "models/moe_ffn.h"

namespace tempered {
namespace {
namespace moe_ffn_test {

using testing::GgufTensorSpec;
using testing::GgufWriter;

constexpr int64_t kDim = 64;
constexpr uint32_t kF32Id = 0;
constexpr uint32_t kQ8_0Id = 8;

MoeConfig small_config() {
    MoeConfig config;
    config.expert_count = 8;
    config.experts_per_token = 2;
    config.shared_expert_count = 1;
    config.expert_ffn_dim = 32;
    config.group_count = 2;
    config.groups_per_token = 1;
    config.gating = ExpertGating::Sigmoid;
    config.normalize_weights = true;
    config.routed_scaling_factor = 2.5f;
    return config;
}

std::vector<uint8_t> f32_bytes(const std::vector<float>& values) {
    std::vector<uint8_t> bytes(values.size() * sizeof(float));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return bytes;
}

// `count` stacked (rows, cols) matrices of `type` with random values.
std::vector<uint8_t> random_matrices(DType type, int64_t count, int64_t rows, int64_t cols, std::mt19937& rng) {
    if (type == DType::Q8_0) return random_weights(type, count * rows, cols, rng);
    std::normal_distribution<float> normal(0.0f, 0.3f);
    std::vector<float> values(static_cast<size_t>(count * rows * cols));
    for (float& v : values) v = normal(rng);
    return f32_bytes(values);
}

// The GGUF bytes of one MoE layer "blk.0." with experts of `type` and an F32 router and bias.
std::vector<uint8_t> moe_layer_file(const MoeConfig& config, DType type, uint32_t seed, int64_t up_rows_override = 0) {
    std::mt19937 rng(seed);
    const uint32_t type_id = type == DType::Q8_0 ? kQ8_0Id : kF32Id;
    const auto E = static_cast<uint64_t>(config.expert_count);
    const auto F = static_cast<uint64_t>(config.expert_ffn_dim);
    const auto D = static_cast<uint64_t>(kDim);
    const auto S = static_cast<uint64_t>(config.shared_expert_count) * F;
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> bias(E);
    for (float& b : bias) b = 0.1f * normal(rng);
    const int64_t up_rows = up_rows_override ? up_rows_override : config.expert_ffn_dim;
    GgufWriter writer;
    writer.tensor({"blk.0.ffn_gate_inp.weight", {D, E}, kF32Id, random_matrices(DType::F32, 1, E, D, rng), {}})
        .tensor({"blk.0.exp_probs_b.bias", {E}, kF32Id, f32_bytes(bias), {}})
        .tensor({"blk.0.ffn_gate_exps.weight", {D, F, E}, type_id, random_matrices(type, E, F, D, rng), {}})
        .tensor({"blk.0.ffn_up_exps.weight",
                 {D, static_cast<uint64_t>(up_rows), E},
                 type_id,
                 random_matrices(type, E, up_rows, D, rng),
                 {}})
        .tensor({"blk.0.ffn_down_exps.weight", {F, D, E}, type_id, random_matrices(type, E, D, F, rng), {}});
    if (S > 0) {
        writer.tensor({"blk.0.ffn_gate_shexp.weight", {D, S}, type_id, random_matrices(type, 1, S, D, rng), {}})
            .tensor({"blk.0.ffn_up_shexp.weight", {D, S}, type_id, random_matrices(type, 1, S, D, rng), {}})
            .tensor({"blk.0.ffn_down_shexp.weight", {S, D}, type_id, random_matrices(type, 1, D, S, rng), {}});
    }
    return writer.bytes();
}

std::vector<double> dequantized(const WeightMatrix& m) {
    std::vector<float> row(static_cast<size_t>(m.cols));
    std::vector<double> all;
    const uint64_t row_bytes = *dtype_row_bytes(m.type, static_cast<uint64_t>(m.cols));
    for (int64_t r = 0; r < m.rows; ++r) {
        dequantize_row(m.type, static_cast<const uint8_t*>(m.data) + static_cast<uint64_t>(r) * row_bytes, row.data(),
                       m.cols);
        all.insert(all.end(), row.begin(), row.end());
    }
    return all;
}

// y = W x in double.
std::vector<double> times(const WeightMatrix& w, const std::vector<double>& x) {
    const std::vector<double> values = dequantized(w);
    std::vector<double> y(static_cast<size_t>(w.rows), 0.0);
    for (int64_t r = 0; r < w.rows; ++r)
        for (int64_t c = 0; c < w.cols; ++c)
            y[static_cast<size_t>(r)] += values[static_cast<size_t>(r * w.cols + c)] * x[static_cast<size_t>(c)];
    return y;
}

// down(silu(gate x) * up x) in double.
std::vector<double> swiglu_ffn(const WeightMatrix& gate, const WeightMatrix& up, const WeightMatrix& down,
                               const std::vector<double>& x) {
    std::vector<double> g = times(gate, x);
    const std::vector<double> u = times(up, x);
    for (size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
    return times(down, g);
}

// The plain per-token reference: route this token alone, then loop over its experts.
std::vector<double> reference_token(const MoeConfig& config, const MoeLayerWeights& w, const float* x_row) {
    const int64_t dim = w.router.cols;
    const std::vector<double> x(x_row, x_row + dim);
    const std::vector<double> logits = times(w.router, x);
    const std::vector<float> logits_f(logits.begin(), logits.end());
    std::vector<ExpertChoice> choices(static_cast<size_t>(config.experts_per_token));
    const float* bias = w.correction_bias.empty() ? nullptr : w.correction_bias.data();
    route_experts(config, logits_f.data(), bias, 1, choices.data());
    std::vector<double> out(static_cast<size_t>(dim), 0.0);
    if (w.has_shared_experts()) out = swiglu_ffn(w.shared_gate, w.shared_up, w.shared_down, x);
    for (const ExpertChoice& c : choices) {
        const auto e = static_cast<size_t>(c.expert);
        const std::vector<double> y = swiglu_ffn(w.gate[e], w.up[e], w.down[e], x);
        for (size_t i = 0; i < y.size(); ++i) out[i] += c.weight * y[i];
    }
    return out;
}

struct LoadedLayer {
    std::vector<uint8_t> bytes;
    std::optional<GgufFile> file;
    MoeLayerWeights weights;
};

LoadedLayer load_layer(const MoeConfig& config, DType type, uint32_t seed = 7) {
    LoadedLayer layer{moe_layer_file(config, type, seed), {}, {}};
    auto file = GgufFile::parse(layer.bytes);
    EXPECT_TRUE(file.ok()) << file.error().message;
    layer.file.emplace(std::move(*file));
    auto weights = load_moe_layer(*layer.file, "blk.0.", kDim, config);
    EXPECT_TRUE(weights.ok()) << weights.error().message;
    layer.weights = std::move(*weights);
    return layer;
}

// Max |batched - reference| over max |reference| for `tokens` random input rows.
double relative_error(const MoeConfig& config, const MoeLayerWeights& weights, int64_t tokens, ThreadPool& pool,
                      uint32_t seed) {
    const int64_t dim = weights.router.cols;
    std::mt19937 rng(seed);
    const std::vector<float> x = random_activations(tokens, dim, rng);
    std::vector<float> out(static_cast<size_t>(tokens * dim), -1.0f);
    MoeFeedForward ffn(config);
    ffn.forward(weights, x.data(), tokens, out.data(), pool);
    double max_error = 0.0, max_value = 0.0;
    for (int64_t t = 0; t < tokens; ++t) {
        const std::vector<double> expected = reference_token(config, weights, &x[static_cast<size_t>(t * dim)]);
        for (int64_t i = 0; i < dim; ++i) {
            const double got = out[static_cast<size_t>(t * dim + i)];
            max_error = std::max(max_error, std::fabs(got - expected[static_cast<size_t>(i)]));
            max_value = std::max(max_value, std::fabs(expected[static_cast<size_t>(i)]));
        }
    }
    return max_error / max_value;
}

TEST(MoeFeedForward, BatchedByExpertEqualsThePerTokenReferenceInFloat) {
    const MoeConfig config = small_config();
    LoadedLayer layer = load_layer(config, DType::F32);
    ThreadPool pool(3);
    for (int64_t tokens : {1, 7, 32}) {
        SCOPED_TRACE(tokens);
        EXPECT_LT(relative_error(config, layer.weights, tokens, pool, 100 + static_cast<uint32_t>(tokens)), 1e-5);
    }
}

TEST(MoeFeedForward, WithoutSharedExpertsGroupsOrBias) {
    MoeConfig config = small_config();
    config.shared_expert_count = 0;
    config.group_count = 0;
    config.groups_per_token = 0;
    config.gating = ExpertGating::Softmax;
    config.experts_per_token = 3;
    LoadedLayer layer = load_layer(config, DType::F32);
    layer.weights.correction_bias.clear();
    ASSERT_FALSE(layer.weights.has_shared_experts());
    ThreadPool pool(2);
    EXPECT_LT(relative_error(config, layer.weights, 9, pool, 5), 1e-5);
}

// Q8_0 experts quantize the activations to 8 bits: the reference (dequantized weights, exact activations)
// differs by that rounding only.
TEST(MoeFeedForward, Q8ExpertsMatchTheReferenceToActivationQuantization) {
    const MoeConfig config = small_config();
    LoadedLayer layer = load_layer(config, DType::Q8_0);
    ThreadPool pool(3);
    for (int64_t tokens : {1, 7, 32}) EXPECT_LT(relative_error(config, layer.weights, tokens, pool, 300), 2e-2);
}

// Each matmul's output row does not depend on the other rows of its batch, so grouping tokens by expert
// changes nothing: a 32-token step equals 32 one-token steps bit for bit, packed or not.
void expect_batch_of_one_equality(const MoeConfig& config, const MoeLayerWeights& weights, ThreadPool& pool) {
    constexpr int64_t kTokens = 32;
    std::mt19937 rng(11);
    const std::vector<float> x = random_activations(kTokens, kDim, rng);
    std::vector<float> batched(static_cast<size_t>(kTokens * kDim)), single(static_cast<size_t>(kDim));
    MoeFeedForward ffn(config);
    ffn.forward(weights, x.data(), kTokens, batched.data(), pool);
    for (int64_t t = 0; t < kTokens; ++t) {
        ffn.forward(weights, &x[static_cast<size_t>(t * kDim)], 1, single.data(), pool);
        for (int64_t i = 0; i < kDim; ++i)
            ASSERT_EQ(batched[static_cast<size_t>(t * kDim + i)], single[static_cast<size_t>(i)]) << t << ", " << i;
    }
}

TEST(MoeFeedForward, BatchedStepEqualsOneTokenStepsBitForBit) {
    const MoeConfig config = small_config();
    ThreadPool pool(3);
    LoadedLayer f32 = load_layer(config, DType::F32);
    expect_batch_of_one_equality(config, f32.weights, pool);
    LoadedLayer q8 = load_layer(config, DType::Q8_0);
    expect_batch_of_one_equality(config, q8.weights, pool);
}

// With many active experts the threads take whole experts; forced to split each expert's matmuls
// instead, the output is the same bit for bit.
TEST(MoeFeedForward, ExpertPerThreadEqualsRowSplitBitForBit) {
    const MoeConfig config = small_config();
    ThreadPool pool(3);
    for (DType type : {DType::F32, DType::Q8_0}) {
        LoadedLayer layer = load_layer(config, type);
        std::mt19937 rng(5);
        const std::vector<float> x = random_activations(32, kDim, rng);
        std::vector<float> by_expert(x.size()), by_rows(x.size());
        MoeFeedForward ffn(config);
        ffn.forward(layer.weights, x.data(), 32, by_expert.data(), pool);
        std::set<int32_t> active;
        for (const ExpertChoice& c : ffn.last_choices()) active.insert(c.expert);
        ASSERT_GE(active.size(), 6u);  // 2 per thread of 3: the expert-per-thread schedule ran
        ffn.set_force_row_parallel(true);
        ffn.forward(layer.weights, x.data(), 32, by_rows.data(), pool);
        EXPECT_EQ(by_expert, by_rows);
    }
}

TEST(MoeFeedForward, PackedQ8ExpertsGiveTheSameOutput) {
    const MoeConfig config = small_config();
    ThreadPool pool(3);
    LoadedLayer file_layout = load_layer(config, DType::Q8_0);
    LoadedLayer packed = load_layer(config, DType::Q8_0);
    std::vector<AlignedBuffer> storage;
    for (WeightMatrix* m : packed.weights.matrices()) {
        ASSERT_TRUE(packing_supports(*m));
        storage.emplace_back(static_cast<size_t>(packed_bytes(*m)));
        *m = pack_weights(*m, storage.back().data());
    }
    std::mt19937 rng(21);
    const std::vector<float> x = random_activations(16, kDim, rng);
    std::vector<float> a(x.size()), b(x.size());
    MoeFeedForward ffn(config);
    ffn.forward(file_layout.weights, x.data(), 16, a.data(), pool);
    const int64_t file_bytes = ffn.expert_weight_bytes_last_forward();
    ffn.forward(packed.weights, x.data(), 16, b.data(), pool);
    EXPECT_EQ(ffn.expert_weight_bytes_last_forward(), file_bytes);  // Q8_0 packs into the file's bytes
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-4f * (1.0f + std::fabs(a[i]))) << i;
}

// The counter counts each active expert's three matrices once, however many tokens chose it, and no
// inactive expert.
TEST(MoeFeedForward, CountsEachActiveExpertOnce) {
    const MoeConfig config = small_config();
    LoadedLayer layer = load_layer(config, DType::F32);
    const int64_t per_expert = 3 * config.expert_ffn_dim * kDim * 4;
    EXPECT_EQ(
        matrix_bytes(layer.weights.gate[0]) + matrix_bytes(layer.weights.up[0]) + matrix_bytes(layer.weights.down[0]),
        per_expert);
    ThreadPool pool(2);
    MoeFeedForward ffn(config);
    for (int64_t tokens : {1, 7, 32}) {
        std::mt19937 rng(static_cast<uint32_t>(tokens));
        const std::vector<float> x = random_activations(tokens, kDim, rng);
        std::vector<float> out(x.size());
        ffn.forward(layer.weights, x.data(), tokens, out.data(), pool);
        std::set<int32_t> active;
        for (const ExpertChoice& c : ffn.last_choices()) active.insert(c.expert);
        EXPECT_EQ(ffn.expert_weight_bytes_last_forward(), static_cast<int64_t>(active.size()) * per_expert);
        if (tokens == 1) {
            EXPECT_EQ(active.size(), 2u);
        }
        if (tokens == 32) {  // 64 choices over 8 experts: far fewer expert reads than choices
            EXPECT_LT(ffn.expert_weight_bytes_last_forward(), 32 * 2 * per_expert);
        }
    }
}

TEST(MoeLoad, SlicesEachExpertOutOfThe3dTensor) {
    const MoeConfig config = small_config();
    LoadedLayer layer = load_layer(config, DType::Q8_0);
    const GgufTensorInfo* gate = layer.file->tensor("blk.0.ffn_gate_exps.weight");
    ASSERT_NE(gate, nullptr);
    ASSERT_EQ(layer.weights.gate.size(), 8u);
    const uint64_t expert_bytes = gate->size_bytes / 8;
    for (size_t e = 0; e < 8; ++e) {
        EXPECT_EQ(layer.weights.gate[e].data, gate->data + e * expert_bytes);
        EXPECT_EQ(layer.weights.gate[e].rows, 32);
        EXPECT_EQ(layer.weights.gate[e].cols, kDim);
        EXPECT_EQ(layer.weights.down[e].rows, kDim);
        EXPECT_EQ(layer.weights.down[e].cols, 32);
    }
    EXPECT_EQ(layer.weights.matrices().size(), 8u * 3 + 3);
    EXPECT_EQ(layer.weights.correction_bias.size(), 8u);
}

TEST(MoeLoad, NamesAShapeThatDoesNotMatchTheConfig) {
    const MoeConfig config = small_config();
    const std::vector<uint8_t> bytes = moe_layer_file(config, DType::F32, 3, /*up_rows_override=*/16);
    auto file = GgufFile::parse(bytes);
    ASSERT_TRUE(file.ok());
    auto weights = load_moe_layer(*file, "blk.0.", kDim, config);
    ASSERT_FALSE(weights.ok());
    EXPECT_NE(weights.error().message.find("blk.0.ffn_up_exps.weight has shape [64, 16, 8], expected [64, 32, 8]"),
              std::string::npos)
        << weights.error().message;
    auto missing = load_moe_layer(*file, "blk.1.", kDim, config);
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("missing tensor blk.1.ffn_gate_inp.weight"), std::string::npos);
}

// The MoE layers of scripts/fixtures/make_deepseek2_models.py's files (written into build/tiny-models by
// the test script): their metadata and tensors as llama.cpp's converter lays them out load, and the
// forward pass equals the per-token reference on them.
TEST(MoeRealFile, LoadsAndRunsTheTinyDeepseek2Experts) {
    for (const char* name : {"ds2-moe-f32.gguf", "ds2-moe-q8_0.gguf", "ds2-moe-softmax-q8_0.gguf"}) {
        SCOPED_TRACE(name);
        const std::filesystem::path path = std::filesystem::path(TEMPERED_SOURCE_DIR) / "build" / "tiny-models" / name;
        if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not written (make_deepseek2_models.py)";
        auto file = GgufFile::open(path.string());
        ASSERT_TRUE(file.ok()) << file.error().message;
        auto config = read_moe_config(*file, "deepseek2");
        ASSERT_TRUE(config.ok()) << config.error().message;
        ASSERT_TRUE(config->has_value());
        const MoeConfig& moe = **config;
        const int64_t dim = *file->get_int("deepseek2.embedding_length");
        const int64_t layers = *file->get_int("deepseek2.block_count");
        ASSERT_LT(moe.leading_dense_layers, layers);
        ThreadPool pool(2);
        for (int64_t layer = moe.leading_dense_layers; layer < layers; ++layer) {
            auto weights = load_moe_layer(*file, "blk." + std::to_string(layer) + ".", dim, moe);
            ASSERT_TRUE(weights.ok()) << weights.error().message;
            EXPECT_EQ(weights->has_shared_experts(), moe.shared_expert_count > 0);
            const bool quantized = weights->gate[0].type != DType::F32;
            EXPECT_LT(relative_error(moe, *weights, 7, pool, 40 + static_cast<uint32_t>(layer)),
                      quantized ? 2e-2 : 1e-5);
        }
    }
}

}  // namespace moe_ffn_test
}  // namespace
}  // namespace tempered
