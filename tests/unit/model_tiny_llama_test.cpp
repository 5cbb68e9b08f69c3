// A tiny random Llama written as GGUF in memory: the forward pass against a plain double-precision
// transformer written out below, batching and KV cache behaviour, and clear errors for bad files and
// bad batches. The same tiny model as a Qwen2 file (Q/K/V biases, half-split rope) checks that row of
// the architecture table. Runs without any downloaded model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <set>

#include "../support/gguf_writer.h"
#include "kv/kv_block_pool.h"
#include "models/decoder.h"
#include "models/model.h"

namespace tempered {
namespace {
namespace model_tiny_llama_test {

using testing::GgufTensorSpec;
using testing::GgufWriter;

constexpr int64_t kDim = 64, kHeads = 4, kKvHeads = 2, kHeadDim = 16, kFfn = 96, kVocab = 50, kLayers = 2;
constexpr int64_t kContext = 64;
constexpr float kEpsilon = 1e-5f, kRopeBase = 10000.0f;

std::vector<float> random_values(size_t n, std::mt19937& rng, float scale) {
    std::normal_distribution<float> normal(0.0f, scale);
    std::vector<float> values(n);
    for (float& v : values) v = normal(rng);
    return values;
}

std::vector<uint8_t> as_bytes(const std::vector<float>& values) {
    std::vector<uint8_t> bytes(values.size() * sizeof(float));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return bytes;
}

// The weights of the tiny model, kept as floats for the reference implementation.
struct TinyWeights {
    std::map<std::string, std::vector<float>> tensors;
    std::map<std::string, std::vector<uint64_t>> dims;  // GGUF order: innermost first

    const std::vector<float>& operator[](const std::string& name) const { return tensors.at(name); }
};

// `qkv_bias`: with blk.N.attn_{q,k,v}.bias, as a Qwen2 file has.
TinyWeights make_weights(bool separate_output, bool qkv_bias = false) {
    std::mt19937 rng(1234);
    TinyWeights w;
    auto add = [&](const std::string& name, std::vector<uint64_t> dims, float scale, float offset = 0.0f) {
        uint64_t count = 1;
        for (uint64_t d : dims) count *= d;
        auto values = random_values(count, rng, scale);
        for (float& v : values) v += offset;
        w.tensors[name] = std::move(values);
        w.dims[name] = std::move(dims);
    };
    const auto dim = static_cast<uint64_t>(kDim);
    add("token_embd.weight", {dim, kVocab}, 1.0f);
    add("output_norm.weight", {dim}, 0.1f, 1.0f);
    if (separate_output) add("output.weight", {dim, kVocab}, 0.2f);
    for (int64_t l = 0; l < kLayers; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        add(p + "attn_norm.weight", {dim}, 0.1f, 1.0f);
        add(p + "attn_q.weight", {dim, kHeads * kHeadDim}, 0.25f);
        add(p + "attn_k.weight", {dim, kKvHeads * kHeadDim}, 0.25f);
        add(p + "attn_v.weight", {dim, kKvHeads * kHeadDim}, 0.2f);
        add(p + "attn_output.weight", {kHeads * kHeadDim, dim}, 0.1f);
        add(p + "ffn_norm.weight", {dim}, 0.1f, 1.0f);
        add(p + "ffn_gate.weight", {dim, kFfn}, 0.2f);
        add(p + "ffn_up.weight", {dim, kFfn}, 0.2f);
        add(p + "ffn_down.weight", {kFfn, dim}, 0.1f);
        if (qkv_bias) {
            add(p + "attn_q.bias", {kHeads * kHeadDim}, 0.5f);
            add(p + "attn_k.bias", {kKvHeads * kHeadDim}, 0.5f);
            add(p + "attn_v.bias", {kKvHeads * kHeadDim}, 0.5f);
        }
    }
    return w;
}

// Changes to a valid file, for the error tests.
struct TinyFileOptions {
    std::set<std::string> omit_keys;
    std::set<std::string> omit_tensors;
    std::map<std::string, std::vector<uint64_t>> reshape;
    uint32_t head_count_kv = kKvHeads;
    std::string architecture = "llama";
    std::string rope_scaling_type;              // empty: no key
    std::map<std::string, uint32_t> extra_u32;  // more keys, the architecture's prefix included
    std::map<std::string, float> extra_f32;
};

std::vector<uint8_t> tiny_gguf(const TinyWeights& weights, const TinyFileOptions& options = {}) {
    GgufWriter writer;
    auto key = [&](const std::string& name) { return !options.omit_keys.count(name); };
    writer.string("general.architecture", options.architecture);
    const std::string a = options.architecture;
    if (key("llama.block_count")) writer.u32(a + ".block_count", kLayers);
    if (key("llama.embedding_length")) writer.u32(a + ".embedding_length", kDim);
    if (key("llama.feed_forward_length")) writer.u32(a + ".feed_forward_length", kFfn);
    if (key("llama.attention.head_count")) writer.u32(a + ".attention.head_count", kHeads);
    writer.u32(a + ".attention.head_count_kv", options.head_count_kv);
    if (key("llama.context_length")) writer.u32(a + ".context_length", kContext);
    if (key("llama.attention.layer_norm_rms_epsilon")) writer.f32(a + ".attention.layer_norm_rms_epsilon", kEpsilon);
    writer.f32(a + ".rope.freq_base", kRopeBase);
    if (!options.rope_scaling_type.empty()) {
        writer.string(a + ".rope.scaling.type", options.rope_scaling_type);
        writer.f32(a + ".rope.scaling.factor", 2.0f);
    }
    for (const auto& [name, value] : options.extra_u32) writer.u32(name, value);
    for (const auto& [name, value] : options.extra_f32) writer.f32(name, value);
    for (const auto& [name, values] : weights.tensors) {
        if (options.omit_tensors.count(name)) continue;
        const auto reshaped = options.reshape.find(name);
        writer.tensor(GgufTensorSpec{name, reshaped != options.reshape.end() ? reshaped->second : weights.dims.at(name),
                                     0, as_bytes(values), std::nullopt});
    }
    return writer.bytes();
}

// ---- The reference: a plain transformer in double precision, one sequence, all positions. ----

using Matrix = std::vector<double>;

// y (out) = W (out, in) x (in), W in GGUF layout (row r = output feature r, contiguous).
std::vector<double> apply(const std::vector<float>& w, const std::vector<double>& x, int64_t out) {
    const auto in = static_cast<int64_t>(x.size());
    std::vector<double> y(static_cast<size_t>(out), 0.0);
    for (int64_t r = 0; r < out; ++r)
        for (int64_t i = 0; i < in; ++i) y[r] += w[r * in + i] * x[i];
    return y;
}

std::vector<double> rms_normalized(const std::vector<double>& x, const std::vector<float>& weight) {
    double mean_square = 0.0;
    for (double v : x) mean_square += v * v / static_cast<double>(x.size());
    std::vector<double> y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] / std::sqrt(mean_square + kEpsilon) * weight[i];
    return y;
}

void rotate_adjacent_pairs(double* head, int64_t position) {
    for (int64_t i = 0; i < kHeadDim / 2; ++i) {
        const double angle = static_cast<double>(position) * std::pow(kRopeBase, -2.0 * i / kHeadDim);
        const double a = head[2 * i], b = head[2 * i + 1];
        head[2 * i] = a * std::cos(angle) - b * std::sin(angle);
        head[2 * i + 1] = a * std::sin(angle) + b * std::cos(angle);
    }
}

// NEOX-style rope (Qwen2): element i turns with element i + head_dim/2.
void rotate_halves(double* head, int64_t position) {
    const int64_t half = kHeadDim / 2;
    for (int64_t i = 0; i < half; ++i) {
        const double angle = static_cast<double>(position) * std::pow(kRopeBase, -2.0 * i / kHeadDim);
        const double a = head[i], b = head[i + half];
        head[i] = a * std::cos(angle) - b * std::sin(angle);
        head[i + half] = a * std::sin(angle) + b * std::cos(angle);
    }
}

void add_bias(std::vector<double>& x, const std::vector<float>& bias) {
    for (size_t i = 0; i < x.size(); ++i) x[i] += bias[i];
}

// Logits (positions, vocab) of every position of `tokens`; `qwen2`: biased Q/K/V and half-split rope.
// windows: per layer, 0 (global) or W (position t sees [t - W + 1, t]); empty: every layer global.
std::vector<std::vector<double>> reference_logits(const TinyWeights& w, const std::vector<int32_t>& tokens,
                                                  bool separate_output, bool qwen2 = false,
                                                  const std::vector<int64_t>& windows = {}) {
    auto rotate = qwen2 ? rotate_halves : rotate_adjacent_pairs;
    const auto n = static_cast<int64_t>(tokens.size());
    std::vector<std::vector<double>> x(static_cast<size_t>(n));
    for (int64_t t = 0; t < n; ++t) {
        const auto& table = w["token_embd.weight"];
        x[t].assign(table.begin() + tokens[t] * kDim, table.begin() + (tokens[t] + 1) * kDim);
    }
    for (int64_t l = 0; l < kLayers; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        std::vector<std::vector<double>> q(n), k(n), v(n);
        for (int64_t t = 0; t < n; ++t) {
            const auto normed = rms_normalized(x[t], w[p + "attn_norm.weight"]);
            q[t] = apply(w[p + "attn_q.weight"], normed, kHeads * kHeadDim);
            k[t] = apply(w[p + "attn_k.weight"], normed, kKvHeads * kHeadDim);
            v[t] = apply(w[p + "attn_v.weight"], normed, kKvHeads * kHeadDim);
            if (qwen2) {
                add_bias(q[t], w[p + "attn_q.bias"]);
                add_bias(k[t], w[p + "attn_k.bias"]);
                add_bias(v[t], w[p + "attn_v.bias"]);
            }
            for (int64_t h = 0; h < kHeads; ++h) rotate(&q[t][h * kHeadDim], t);
            for (int64_t h = 0; h < kKvHeads; ++h) rotate(&k[t][h * kHeadDim], t);
        }
        const int64_t window = windows.empty() ? 0 : windows[static_cast<size_t>(l)];
        for (int64_t t = 0; t < n; ++t) {
            std::vector<double> attention(kHeads * kHeadDim, 0.0);
            const int64_t first = window > 0 ? std::max<int64_t>(0, t - window + 1) : 0;
            for (int64_t h = 0; h < kHeads; ++h) {
                const int64_t g = h / (kHeads / kKvHeads);
                std::vector<double> weights(static_cast<size_t>(t + 1), 0.0);
                double total = 0.0;
                for (int64_t s = first; s <= t; ++s) {
                    double dot = 0.0;
                    for (int64_t i = 0; i < kHeadDim; ++i) dot += q[t][h * kHeadDim + i] * k[s][g * kHeadDim + i];
                    weights[s] = std::exp(dot / std::sqrt(static_cast<double>(kHeadDim)));
                    total += weights[s];
                }
                for (int64_t s = first; s <= t; ++s)
                    for (int64_t i = 0; i < kHeadDim; ++i)
                        attention[h * kHeadDim + i] += weights[s] / total * v[s][g * kHeadDim + i];
            }
            const auto projected = apply(w[p + "attn_output.weight"], attention, kDim);
            for (int64_t i = 0; i < kDim; ++i) x[t][i] += projected[i];
            const auto normed = rms_normalized(x[t], w[p + "ffn_norm.weight"]);
            auto gate = apply(w[p + "ffn_gate.weight"], normed, kFfn);
            const auto up = apply(w[p + "ffn_up.weight"], normed, kFfn);
            for (int64_t i = 0; i < kFfn; ++i) gate[i] = gate[i] / (1.0 + std::exp(-gate[i])) * up[i];
            const auto down = apply(w[p + "ffn_down.weight"], gate, kDim);
            for (int64_t i = 0; i < kDim; ++i) x[t][i] += down[i];
        }
    }
    std::vector<std::vector<double>> logits(static_cast<size_t>(n));
    for (int64_t t = 0; t < n; ++t) {
        logits[t] = apply(w[separate_output ? "output.weight" : "token_embd.weight"],
                          rms_normalized(x[t], w["output_norm.weight"]), kVocab);
    }
    return logits;
}

// ---- Fixture ----

class TinyLlama : public ::testing::Test {
protected:
    void load(bool separate_output = false, DType kv_type = DType::F32) {
        weights_ = make_weights(separate_output);
        bytes_ = tiny_gguf(weights_);
        auto file = GgufFile::parse(bytes_);
        ASSERT_TRUE(file.ok()) << file.error().message;
        file_ = std::make_unique<GgufFile>(std::move(file.value()));
        auto model = load_model(*file_, pool_);
        ASSERT_TRUE(model.ok()) << model.error().message;
        model_ = std::move(model.value());
        auto cache = KvBlockPool::create(kv_cache_shape(model_->config(), kv_type, 4), 32);
        ASSERT_TRUE(cache.ok()) << cache.error().message;
        cache_ = std::move(cache.value());
    }

    // Logits of every token of `tokens` of `sequence`, all in one batch from position `first`.
    std::vector<float> forward_all(const std::vector<int32_t>& tokens, int32_t first = 0, int32_t sequence = 0) {
        EXPECT_TRUE(cache_->ensure_capacity(sequence, first + static_cast<int64_t>(tokens.size())));
        Batch batch;
        for (size_t i = 0; i < tokens.size(); ++i)
            batch.add(tokens[i], first + static_cast<int32_t>(i), sequence, true);
        std::vector<float> logits(tokens.size() * kVocab);
        const Status status = model_->forward(batch, *cache_, logits.data());
        EXPECT_TRUE(status.ok()) << status.error().message;
        return logits;
    }

    ThreadPool pool_{2};
    TinyWeights weights_;
    std::vector<uint8_t> bytes_;
    std::unique_ptr<GgufFile> file_;
    std::unique_ptr<Model> model_;
    std::unique_ptr<KvBlockPool> cache_;
    const std::vector<int32_t> tokens_ = {3, 17, 42, 0, 49, 8, 8, 23, 11, 30};
};

TEST_F(TinyLlama, ConfigComesFromMetadata) {
    load();
    const ModelConfig& config = model_->config();
    EXPECT_EQ(config.architecture, "llama");
    EXPECT_EQ(config.layer_count, kLayers);
    EXPECT_EQ(config.embedding_dim, kDim);
    EXPECT_EQ(config.ffn_dim, kFfn);
    EXPECT_EQ(config.head_count, kHeads);
    EXPECT_EQ(config.kv_head_count, kKvHeads);
    EXPECT_EQ(config.head_dim, kHeadDim);
    EXPECT_EQ(config.rope_dims, kHeadDim);
    EXPECT_EQ(config.vocab_size, kVocab);
    EXPECT_EQ(config.context_length, kContext);
    EXPECT_FLOAT_EQ(config.rope_freq_base, kRopeBase);
    EXPECT_FLOAT_EQ(config.rms_epsilon, kEpsilon);
    EXPECT_EQ(config.rope_style, RopeStyle::AdjacentPairs);
}

TEST(ModelConfigTest, RopeStylesMapToTheKernelsPairing) {
    EXPECT_EQ(rotary_pairing(RopeStyle::AdjacentPairs), RotaryPairing::AdjacentElements);
    EXPECT_EQ(rotary_pairing(RopeStyle::Halves), RotaryPairing::HalvesApart);
}

TEST_F(TinyLlama, PrefillMatchesPlainTransformer) {
    for (bool separate_output : {false, true}) {
        load(separate_output);
        const auto logits = forward_all(tokens_);
        const auto expected = reference_logits(weights_, tokens_, separate_output);
        for (size_t t = 0; t < tokens_.size(); ++t)
            for (int64_t v = 0; v < kVocab; ++v)
                ASSERT_NEAR(logits[t * kVocab + v], expected[t][v], 2e-3) << "position " << t << " token " << v;
    }
}

TEST_F(TinyLlama, TokenByTokenDecodeEqualsPrefill) {
    load();
    const auto prefill = forward_all(tokens_, 0, 0);
    for (size_t t = 0; t < tokens_.size(); ++t) {
        const auto step = forward_all({tokens_[t]}, static_cast<int32_t>(t), 1);
        for (int64_t v = 0; v < kVocab; ++v) ASSERT_EQ(step[v], prefill[t * kVocab + v]) << t;
    }
}

TEST_F(TinyLlama, ChunkedPrefillEqualsOneBatch) {
    load();
    const auto whole = forward_all(tokens_, 0, 0);
    const std::vector<int32_t> first(tokens_.begin(), tokens_.begin() + 3), rest(tokens_.begin() + 3, tokens_.end());
    (void)forward_all(first, 0, 1);
    const auto second = forward_all(rest, 3, 1);
    for (size_t i = 0; i < second.size(); ++i) ASSERT_EQ(second[i], whole[3 * kVocab + i]);
}

// Tokens of three sequences, interleaved in one batch, give what each gives alone; only the tokens
// that want logits produce rows, in batch order.
TEST_F(TinyLlama, InterleavedSequencesMatchSeparateRuns) {
    load();
    const std::vector<std::vector<int32_t>> sequences = {{1, 2, 3, 4}, {40, 41}, {7, 7, 7, 7, 7}};
    std::vector<std::vector<float>> alone;
    for (size_t s = 0; s < sequences.size(); ++s)
        alone.push_back(forward_all(sequences[s], 0, static_cast<int32_t>(10 + s)));

    Batch batch;
    std::vector<std::pair<size_t, size_t>> outputs;  // (sequence, position) of each logits row
    for (size_t position = 0; position < 5; ++position) {
        for (size_t s = 0; s < sequences.size(); ++s) {
            if (position >= sequences[s].size()) continue;
            const bool wants = position % 2 == 1 || position + 1 == sequences[s].size();
            batch.add(sequences[s][position], static_cast<int32_t>(position), static_cast<int32_t>(s), wants);
            if (wants) outputs.emplace_back(s, position);
            ASSERT_TRUE(cache_->ensure_capacity(static_cast<int32_t>(s), static_cast<int64_t>(position) + 1));
        }
    }
    ASSERT_EQ(batch.output_count(), static_cast<int64_t>(outputs.size()));
    std::vector<float> logits(outputs.size() * kVocab);
    ASSERT_TRUE(model_->forward(batch, *cache_, logits.data()).ok());
    for (size_t row = 0; row < outputs.size(); ++row) {
        const auto [s, position] = outputs[row];
        for (int64_t v = 0; v < kVocab; ++v) {
            ASSERT_NEAR(logits[row * kVocab + v], alone[s][position * kVocab + v], 1e-5) << s << " " << position;
        }
    }
}

TEST_F(TinyLlama, HalfPrecisionKvCacheStaysClose) {
    load(false, DType::F32);
    const auto exact = forward_all(tokens_);
    for (DType type : {DType::F16, DType::BF16}) {
        load(false, type);
        const auto rounded = forward_all(tokens_);
        const float relative = type == DType::F16 ? 1e-2f : 1e-1f;  // 11 and 8 significant bits
        for (size_t i = 0; i < exact.size(); ++i) {
            ASSERT_NEAR(rounded[i], exact[i], relative * std::max(1.0f, std::fabs(exact[i]))) << dtype_name(type);
        }
    }
}

TEST_F(TinyLlama, InvalidBatchesAreErrors) {
    load();
    std::vector<float> logits(kVocab);
    ASSERT_TRUE(cache_->ensure_capacity(0, 4));
    auto forward_one = [&](int32_t token, int32_t position, int32_t sequence) {
        Batch batch;
        batch.add(token, position, sequence, true);
        return model_->forward(batch, *cache_, logits.data());
    };
    EXPECT_FALSE(forward_one(kVocab, 0, 0).ok());
    EXPECT_FALSE(forward_one(-1, 0, 0).ok());
    EXPECT_FALSE(forward_one(1, -1, 0).ok());
    EXPECT_FALSE(forward_one(1, 4, 0).ok());         // no block for position 4
    EXPECT_FALSE(forward_one(1, 0, 5).ok());         // unknown sequence
    EXPECT_FALSE(forward_one(1, kContext, 0).ok());  // beyond the context
    EXPECT_TRUE(forward_one(1, 3, 0).ok());

    auto other = KvBlockPool::create(KvCacheShape{kLayers + 1, kKvHeads, kHeadDim, 4, DType::F16}, 4);
    ASSERT_TRUE(other.ok());
    ASSERT_TRUE(other.value()->ensure_capacity(0, 4));
    Batch batch;
    batch.add(1, 0, 0, true);
    EXPECT_FALSE(model_->forward(batch, *other.value(), logits.data()).ok());
}

// ---- Bad files: an Error that names the problem, never a crash. ----

std::string load_error(const TinyFileOptions& options, bool qkv_bias = false) {
    const auto bytes = tiny_gguf(make_weights(false, qkv_bias), options);
    auto file = GgufFile::parse(bytes);
    if (!file.ok()) return "parse: " + file.error().message;
    ThreadPool pool(1);
    auto model = load_model(file.value(), pool);
    return model.ok() ? "" : model.error().message;
}

TEST(TinyLlamaErrors, MissingOrInconsistentMetadata) {
    for (const char* key :
         {"llama.block_count", "llama.embedding_length", "llama.feed_forward_length", "llama.attention.head_count",
          "llama.context_length", "llama.attention.layer_norm_rms_epsilon"}) {
        TinyFileOptions options;
        options.omit_keys = {key};
        const std::string error = load_error(options);
        EXPECT_NE(error.find(std::string(key).substr(6)), std::string::npos) << key << ": " << error;
    }
    TinyFileOptions indivisible;
    indivisible.head_count_kv = 3;
    EXPECT_NE(load_error(indivisible).find("head_count_kv"), std::string::npos);
    TinyFileOptions zero_kv;
    zero_kv.head_count_kv = 0;
    EXPECT_NE(load_error(zero_kv).find("head_count_kv"), std::string::npos);
    TinyFileOptions yarn;  // the standard decoder runs YaRN (model_tiny_families_test checks it against llama.cpp)
    yarn.rope_scaling_type = "yarn";
    EXPECT_EQ(load_error(yarn), "");
    TinyFileOptions unknown;
    unknown.architecture = "mamba";
    EXPECT_NE(load_error(unknown).find("mamba"), std::string::npos);
    TinyFileOptions linear;
    linear.rope_scaling_type = "linear";
    EXPECT_EQ(load_error(linear), "");
}

TEST(TinyLlamaErrors, MissingOrMisshapenTensors) {
    TinyFileOptions missing;
    missing.omit_tensors = {"blk.1.ffn_up.weight"};
    EXPECT_NE(load_error(missing).find("blk.1.ffn_up.weight"), std::string::npos);
    TinyFileOptions transposed;
    transposed.reshape["blk.0.attn_k.weight"] = {kKvHeads * kHeadDim, kDim};
    EXPECT_NE(load_error(transposed).find("blk.0.attn_k.weight"), std::string::npos);
    TinyFileOptions vector_shape;
    vector_shape.reshape["output_norm.weight"] = {kDim / 2, 2};
    EXPECT_NE(load_error(vector_shape).find("output_norm.weight"), std::string::npos);
}

// Latent attention and the rope attention factor belong to the architecture: a llama file that claims
// them, or a deepseek2 file without kv_lora_rank, is refused by name instead of running a mismatched cache.
TEST(TinyLlamaErrors, LatentAttentionFollowsTheArchitectureRow) {
    TinyFileOptions latent_llama;
    latent_llama.extra_u32 = {{"llama.attention.kv_lora_rank", 8},
                              {"llama.attention.key_length", kHeadDim},
                              {"llama.attention.value_length", kHeadDim},
                              {"llama.rope.dimension_count", 8}};
    EXPECT_NE(load_error(latent_llama).find("kv_lora_rank is supported for deepseek2 only"), std::string::npos)
        << load_error(latent_llama);
    TinyFileOptions attn_factor;
    attn_factor.rope_scaling_type = "linear";
    attn_factor.extra_f32 = {{"llama.rope.scaling.attn_factor", 2.0f}};
    EXPECT_NE(load_error(attn_factor).find("attn_factor"), std::string::npos) << load_error(attn_factor);
    TinyFileOptions plain_deepseek2;
    plain_deepseek2.architecture = "deepseek2";
    EXPECT_NE(load_error(plain_deepseek2).find("kv_lora_rank"), std::string::npos) << load_error(plain_deepseek2);
}

// A llama file with Q/K/V biases is refused (the llama row would drop them); a qwen2 file needs them.
TEST(TinyLlamaErrors, BiasesFollowTheArchitectureRow) {
    EXPECT_NE(load_error({}, /*qkv_bias=*/true).find("blk.0.attn_q.bias"), std::string::npos);
    TinyFileOptions qwen2;
    qwen2.architecture = "qwen2";
    EXPECT_NE(load_error(qwen2).find("blk.0.attn_q.bias"), std::string::npos);
    EXPECT_EQ(load_error(qwen2, /*qkv_bias=*/true), "");
}

// The qwen2 row of the same tiny model: biased Q/K/V and half-split rope against the reference.
TEST(TinyQwen2, PrefillMatchesPlainTransformer) {
    const TinyWeights weights = make_weights(/*separate_output=*/true, /*qkv_bias=*/true);
    TinyFileOptions options;
    options.architecture = "qwen2";
    const auto bytes = tiny_gguf(weights, options);
    auto file = GgufFile::parse(bytes);
    ASSERT_TRUE(file.ok()) << file.error().message;
    ThreadPool pool(2);
    auto model = load_model(file.value(), pool);
    ASSERT_TRUE(model.ok()) << model.error().message;
    EXPECT_EQ(model.value()->config().rope_style, RopeStyle::Halves);
    auto cache = KvBlockPool::create(kv_cache_shape(model.value()->config(), DType::F32, 4), 32);
    ASSERT_TRUE(cache.ok()) << cache.error().message;
    const std::vector<int32_t> tokens = {3, 17, 42, 0, 49, 8, 8, 23, 11, 30};
    ASSERT_TRUE(cache.value()->ensure_capacity(0, static_cast<int64_t>(tokens.size())));
    Batch batch;
    for (size_t i = 0; i < tokens.size(); ++i) batch.add(tokens[i], static_cast<int32_t>(i), 0, true);
    std::vector<float> logits(tokens.size() * kVocab);
    const Status status = model.value()->forward(batch, *cache.value(), logits.data());
    ASSERT_TRUE(status.ok()) << status.error().message;
    const auto expected = reference_logits(weights, tokens, /*separate_output=*/true, /*qwen2=*/true);
    for (size_t t = 0; t < tokens.size(); ++t)
        for (int64_t v = 0; v < kVocab; ++v)
            ASSERT_NEAR(logits[t * kVocab + v], expected[t][v], 2e-3) << "position " << t << " token " << v;
}

// Sliding-window layers in the one decoder: layer 0 sees the last 3 positions, layer 1 all of them; the
// prefill against the reference with the same windows, and token-by-token decode against the prefill.
TEST(TinyLlamaWindows, WindowLayersMatchTheReferenceInPrefillAndDecode) {
    const TinyWeights weights = make_weights(/*separate_output=*/true);
    const auto bytes = tiny_gguf(weights);
    auto file = GgufFile::parse(bytes);
    ASSERT_TRUE(file.ok()) << file.error().message;
    ThreadPool pool(2);
    DecoderSpec spec = llama_spec();
    spec.layers = {LayerSpec{.attention_window = 3}, LayerSpec{.attention_window = 0}};
    auto config = read_model_config(file.value(), spec.rope_style);
    ASSERT_TRUE(config.ok()) << config.error().message;
    auto model = load_decoder(file.value(), std::move(config.value()), std::move(spec), {}, pool);
    ASSERT_TRUE(model.ok()) << model.error().message;
    auto cache = KvBlockPool::create(kv_cache_shape(model.value()->config(), DType::F32, 4), 32);
    ASSERT_TRUE(cache.ok()) << cache.error().message;
    const std::vector<int32_t> tokens = {3, 17, 42, 0, 49, 8, 8, 23, 11, 30};
    ASSERT_TRUE(cache.value()->ensure_capacity(0, static_cast<int64_t>(tokens.size())));
    ASSERT_TRUE(cache.value()->ensure_capacity(1, static_cast<int64_t>(tokens.size())));
    Batch batch;
    for (size_t i = 0; i < tokens.size(); ++i) batch.add(tokens[i], static_cast<int32_t>(i), 0, true);
    std::vector<float> prefill(tokens.size() * kVocab);
    ASSERT_TRUE(model.value()->forward(batch, *cache.value(), prefill.data()).ok());
    const auto expected = reference_logits(weights, tokens, /*separate_output=*/true, /*qwen2=*/false, {3, 0});
    const auto global = reference_logits(weights, tokens, /*separate_output=*/true);
    double window_effect = 0.0;
    for (size_t t = 0; t < tokens.size(); ++t) {
        for (int64_t v = 0; v < kVocab; ++v) {
            ASSERT_NEAR(prefill[t * kVocab + v], expected[t][v], 2e-3) << "position " << t << " token " << v;
            window_effect = std::max(window_effect, std::fabs(expected[t][v] - global[t][v]));
        }
    }
    EXPECT_GT(window_effect, 0.05);  // the window changes the logits: the comparison above can fail
    std::vector<float> step(kVocab);
    for (size_t t = 0; t < tokens.size(); ++t) {
        Batch one;
        one.add(tokens[t], static_cast<int32_t>(t), 1, true);
        ASSERT_TRUE(model.value()->forward(one, *cache.value(), step.data()).ok());
        for (int64_t v = 0; v < kVocab; ++v) ASSERT_EQ(step[v], prefill[t * kVocab + v]) << t;
    }
}

// Every DecoderSpec field is computed now; one whose tensors the file lacks is a load error naming them.
TEST(TinyLlamaErrors, SpecFieldsNeedingTensorsTheFileLacksAreRefused) {
    const auto bytes = tiny_gguf(make_weights(false));
    auto file = GgufFile::parse(bytes);
    ASSERT_TRUE(file.ok()) << file.error().message;
    ThreadPool pool(1);
    auto load_with = [&](void (*change)(DecoderSpec&)) -> std::string {
        DecoderSpec spec = llama_spec();
        change(spec);
        auto config = read_model_config(file.value(), spec.rope_style);
        if (!config.ok()) return config.error().message;
        auto model = load_decoder(file.value(), std::move(config.value()), std::move(spec), {}, pool);
        return model.ok() ? "" : model.error().message;
    };
    EXPECT_EQ(load_with([](DecoderSpec&) {}), "");
    EXPECT_NE(load_with([](DecoderSpec& s) { s.qk_norm = true; }).find("missing tensor blk.0.attn_q_norm.weight"),
              std::string::npos);
    EXPECT_NE(load_with([](DecoderSpec& s) {
                  s.norm_placement = NormPlacement::PreAndPostNorm;
              }).find("missing tensor blk.0.post_attention_norm.weight"),
              std::string::npos);
    EXPECT_EQ(load_with([](DecoderSpec& s) { s.activation.kind = GateActivation::GeluTanh; }), "");
    EXPECT_EQ(load_with([](DecoderSpec& s) { s.layers.assign(kLayers, LayerSpec{.attention_window = 8}); }), "");
    EXPECT_NE(load_with([](DecoderSpec& s) { s.layers.assign(kLayers + 1, LayerSpec{}); }).find("layers"),
              std::string::npos);
}

}  // namespace model_tiny_llama_test
}  // namespace
}  // namespace tempered
