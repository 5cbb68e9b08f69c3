#include "models/decoder.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/aligned_buffer.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/dequantize.h"
#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/packed_weights.h"
#include "models/latent_attention.h"
#include "models/moe_ffn.h"
#include "models/weights.h"

namespace tempered {
namespace {

struct DecoderLayer {
    std::vector<float> attention_norm;             // (embedding_dim)
    WeightMatrix query;                            // (q_dim, embedding_dim)
    WeightMatrix key;                              // (kv_dim, embedding_dim)
    WeightMatrix value;                            // (kv_dim, embedding_dim)
    std::vector<float> query_bias;                 // (q_dim), empty unless DecoderSpec::qkv_bias
    std::vector<float> key_bias;                   // (kv_dim), empty unless DecoderSpec::qkv_bias
    std::vector<float> value_bias;                 // (kv_dim), empty unless DecoderSpec::qkv_bias
    std::vector<float> query_norm;                 // (head_dim), empty unless DecoderSpec::qk_norm
    std::vector<float> key_norm;                   // (head_dim), empty unless DecoderSpec::qk_norm
    WeightMatrix attention_output;                 // (embedding_dim, q_dim)
    std::vector<float> output_bias;                // (embedding_dim), empty unless DecoderSpec::output_bias
    std::vector<float> sinks;                      // (head_count), empty unless DecoderSpec::attention_sinks
    std::vector<float> attention_post_norm;        // (embedding_dim), empty unless NormPlacement::PreAndPostNorm
    std::vector<float> ffn_norm;                   // (embedding_dim)
    WeightMatrix ffn_gate;                         // (ffn_dim, embedding_dim)
    WeightMatrix ffn_up;                           // (ffn_dim, embedding_dim)
    WeightMatrix ffn_down;                         // (embedding_dim, ffn_dim)
    std::vector<float> ffn_post_norm;              // (embedding_dim), empty unless NormPlacement::PreAndPostNorm
    std::optional<LatentAttentionWeights> latent;  // AttentionKind::Latent: instead of query .. attention_output
    std::optional<MoeLayerWeights> experts;        // layers >= leading_dense_layers of an MoE file: instead of ffn_*
};

struct DecoderWeights {
    WeightMatrix token_embeddings;                // (vocab_size, embedding_dim)
    std::vector<DecoderLayer> layers;             // (layer_count)
    std::vector<float> output_norm;               // (embedding_dim)
    WeightMatrix output;                          // (vocab_size, embedding_dim); token_embeddings when tied
    std::vector<float> rope_inverse_frequencies;  // (rope_dims / 2): angle of pair i = position * this[i]
    // YaRN's magnitude (and a file's rope.scaling.attn_factor): the rotated query and key parts are scaled by
    // it, as ggml's rope scales cos and sin; 1 otherwise. Latent attention applies its own (latent_attention.h).
    float rope_magnitude = 1.0f;
    std::vector<float> window_rope_inverse_frequencies;  // (rope_dims / 2) of window layers; empty: the above
    std::vector<std::vector<float>> dequantized;         // owners of the matrices when ModelOptions::dequantize_weights
    std::vector<AlignedBuffer> packed;                   // owners of the matrices repacked for the integer kernels
};

// Every matrix the forward pass multiplies by: all but the embedding table (looked up row by row).
std::vector<WeightMatrix*> multiplied_matrices(DecoderWeights& weights) {
    std::vector<WeightMatrix*> matrices = {&weights.output};
    for (DecoderLayer& layer : weights.layers) {
        if (layer.latent) {
            for (WeightMatrix* m : layer.latent->matrices()) matrices.push_back(m);
        } else {
            for (WeightMatrix* m : {&layer.query, &layer.key, &layer.value, &layer.attention_output})
                matrices.push_back(m);
        }
        if (layer.experts) {
            for (WeightMatrix* m : layer.experts->matrices()) matrices.push_back(m);
        } else {
            for (WeightMatrix* m : {&layer.ffn_gate, &layer.ffn_up, &layer.ffn_down}) matrices.push_back(m);
        }
    }
    return matrices;
}

// Points every multiplied matrix at a float32 copy.
void dequantize_all(DecoderWeights& weights) {
    const std::vector<WeightMatrix*> matrices = multiplied_matrices(weights);
    weights.dequantized.resize(matrices.size());
    for (size_t i = 0; i < matrices.size(); ++i) dequantize_matrix(*matrices[i], weights.dequantized[i]);
}

// Whether pack_all repacks `matrix` for the packed kernels. The scalar ISA keeps the file layout: its
// row-order kernel is the faster scalar one.
bool will_be_packed(const WeightMatrix& matrix) {
    return active_cpu_isa() != CpuIsa::Scalar && packing_supports(matrix);
}

// Points every multiplied matrix whose type has neither an integer nor a packed kernel (Q5_0, Q4_0, F16
// ... today) at a float32 copy. matmul() would otherwise dequantize each of its rows on every call, which
// costs more than the float32 copy's memory; types the kernels learn later stop taking this path by themselves.
void dequantize_unkerneled(DecoderWeights& weights) {
    std::vector<WeightMatrix*> matrices;
    for (WeightMatrix* m : multiplied_matrices(weights))
        if (m->type != DType::F32 && !integer_kernel_supports(m->type) && !will_be_packed(*m)) matrices.push_back(m);
    weights.dequantized.resize(matrices.size());
    for (size_t i = 0; i < matrices.size(); ++i) dequantize_matrix(*matrices[i], weights.dequantized[i]);
}

// Repacks every multiplied matrix the packed kernels support (packed_weights.h); the file's copy is no
// longer read, except the embedding rows.
void pack_all(DecoderWeights& weights, ThreadPool& pool) {
    std::vector<WeightMatrix*> matrices;
    for (WeightMatrix* m : multiplied_matrices(weights))
        if (will_be_packed(*m)) matrices.push_back(m);
    weights.packed.resize(matrices.size());
    for (size_t i = 0; i < matrices.size(); ++i)
        weights.packed[i] = AlignedBuffer(static_cast<size_t>(packed_bytes(*matrices[i])));
    pool.parallel_for(static_cast<int64_t>(matrices.size()), [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            const auto index = static_cast<size_t>(i);
            *matrices[index] = pack_weights(*matrices[index], weights.packed[index].data());
        }
    });
}

// One item of a step's attention: batch tokens [first, first + count) (consecutive positions of one
// sequence, at most kMaxRunTokens) with the query heads of one KV head.
struct AttentionWork {
    int64_t first_token = 0;
    int64_t token_count = 0;
    int64_t kv_head = 0;
};

// Activations of one step, sized for `token_capacity` tokens and grown only when a batch is larger.
struct DecoderRunState {
    int64_t token_capacity = 0;
    std::vector<float> residual;                // (tokens, embedding_dim): the residual stream x
    std::vector<float> normed;                  // (tokens, embedding_dim): rmsnorm(x), the input of each matmul
    std::vector<float> query;                   // (tokens, q_dim)
    std::vector<float> key;                     // (tokens, kv_dim)
    std::vector<float> value;                   // (tokens, kv_dim)
    std::vector<float> attention;               // (tokens, q_dim): attention output, heads side by side
    std::vector<float> projected;               // (tokens, embedding_dim): output of attention_output and ffn_down
    std::vector<float> gate;                    // (tokens, ffn_dim), then silu(gate) * up
    std::vector<float> up;                      // (tokens, ffn_dim)
    std::vector<float> rope_cos;                // (tokens, rope_dims / 2): cosines of each token's rotary angles
    std::vector<float> rope_sin;                // (tokens, rope_dims / 2)
    std::vector<float> window_rope_cos;         // (tokens, rope_dims / 2) of window layers, when their base differs
    std::vector<float> window_rope_sin;         // (tokens, rope_dims / 2)
    std::vector<float> attention_scratch;       // (threads, scratch_floats()): see attend()
    std::vector<AttentionWork> attention_work;  // this step's attention items, the same for every layer
    std::atomic<int64_t> next_attention_work{0};
};

// Inverse frequencies base^(-2i/rope_dims), divided by the linear scaling factor and, for Llama 3
// style files, by the per-pair factors of rope_freqs.weight.
std::vector<float> rope_inverse_frequencies(const ModelConfig& config, float base,
                                            const std::vector<float>& frequency_factors) {
    std::vector<float> inverse_frequencies;
    for (int64_t i = 0; i < config.rope_dims / 2; ++i) {
        const double inverse =
            std::pow(static_cast<double>(base), -2.0 * static_cast<double>(i) / static_cast<double>(config.rope_dims));
        const double scaled = config.rope_scaling == RopeScaling::Yarn ? inverse * rope_frequency_scale(config, i)
                                                                       : inverse / config.rope_scaling_factor;
        inverse_frequencies.push_back(static_cast<float>(scaled / frequency_factors[static_cast<size_t>(i)]));
    }
    return inverse_frequencies;
}

Result<DecoderWeights> load_weights(const GgufFile& file, const ModelConfig& config, const DecoderSpec& spec) {
    DecoderWeights weights;
    const int64_t dim = config.embedding_dim;
#define LOAD(target, expression)              \
    do {                                      \
        auto loaded_ = (expression);          \
        if (!loaded_) return loaded_.error(); \
        target = std::move(loaded_.value());  \
    } while (0)
    LOAD(weights.token_embeddings, find_matrix(file, "token_embd.weight", config.vocab_size, dim));
    if (spec.final_norm) LOAD(weights.output_norm, find_vector(file, "output_norm.weight", dim));
    weights.output = weights.token_embeddings;
    if (file.tensor("output.weight")) LOAD(weights.output, find_matrix(file, "output.weight", config.vocab_size, dim));
    weights.layers.resize(static_cast<size_t>(config.layer_count));
    for (int64_t i = 0; i < config.layer_count; ++i) {
        const std::string prefix = "blk." + std::to_string(i) + ".";
        DecoderLayer& layer = weights.layers[static_cast<size_t>(i)];
        LOAD(layer.attention_norm, find_vector(file, prefix + "attn_norm.weight", dim));
        if (spec.attention == AttentionKind::Latent) {
            LOAD(layer.latent, load_latent_attention(file, prefix, config));
        } else {
            LOAD(layer.query, find_matrix(file, prefix + "attn_q.weight", config.q_dim(), dim));
            LOAD(layer.key, find_matrix(file, prefix + "attn_k.weight", config.kv_dim(), dim));
            LOAD(layer.value, find_matrix(file, prefix + "attn_v.weight", config.kv_dim(), dim));
            LOAD(layer.attention_output, find_matrix(file, prefix + "attn_output.weight", dim, config.q_dim()));
        }
        LOAD(layer.ffn_norm, find_vector(file, prefix + spec.ffn_norm_name + ".weight", dim));
        if (config.experts && i >= config.experts->leading_dense_layers) {
            LOAD(layer.experts, load_moe_layer(file, prefix, dim, *config.experts));
        } else {
            LOAD(layer.ffn_gate, find_matrix(file, prefix + "ffn_gate.weight", config.ffn_dim, dim));
            LOAD(layer.ffn_up, find_matrix(file, prefix + "ffn_up.weight", config.ffn_dim, dim));
            LOAD(layer.ffn_down, find_matrix(file, prefix + "ffn_down.weight", dim, config.ffn_dim));
        }
        if (spec.qkv_bias) {
            LOAD(layer.query_bias, find_vector(file, prefix + "attn_q.bias", config.q_dim()));
            LOAD(layer.key_bias, find_vector(file, prefix + "attn_k.bias", config.kv_dim()));
            LOAD(layer.value_bias, find_vector(file, prefix + "attn_v.bias", config.kv_dim()));
        }
        if (spec.output_bias) LOAD(layer.output_bias, find_vector(file, prefix + "attn_output.bias", dim));
        if (spec.attention_sinks) LOAD(layer.sinks, find_vector(file, prefix + "attn_sinks.weight", config.head_count));
        if (spec.qk_norm) {
            LOAD(layer.query_norm, find_vector(file, prefix + "attn_q_norm.weight", config.head_dim));
            LOAD(layer.key_norm, find_vector(file, prefix + "attn_k_norm.weight", config.head_dim));
        }
        if (spec.norm_placement == NormPlacement::PreAndPostNorm) {
            LOAD(layer.attention_post_norm, find_vector(file, prefix + "post_attention_norm.weight", dim));
            LOAD(layer.ffn_post_norm, find_vector(file, prefix + "post_ffw_norm.weight", dim));
        }
        // A bias or sink the spec does not apply would be silently dropped: refuse the file instead.
        for (const char* extra :
             {"attn_q.bias", "attn_k.bias", "attn_v.bias", "attn_output.bias", "attn_sinks.weight"}) {
            const std::string_view name(extra);
            const bool applied = name == "attn_output.bias"    ? spec.output_bias
                                 : name == "attn_sinks.weight" ? spec.attention_sinks
                                                               : spec.qkv_bias;
            if (!applied && file.tensor(prefix + extra))
                return Error{"model: " + config.architecture + " tensor " + prefix + extra + " is not supported"};
        }
    }
    const int64_t pairs = config.rope_dims / 2;
    std::vector<float> frequency_factors(static_cast<size_t>(pairs), 1.0f);
    if (file.tensor("rope_freqs.weight")) LOAD(frequency_factors, find_vector(file, "rope_freqs.weight", pairs));
#undef LOAD
    weights.rope_inverse_frequencies = rope_inverse_frequencies(config, config.rope_freq_base, frequency_factors);
    if (!config.latent_attention) weights.rope_magnitude = rope_magnitude(config);
    if (spec.window_rope_freq_base > 0.0f) {
        weights.window_rope_inverse_frequencies =
            rope_inverse_frequencies(config, spec.window_rope_freq_base, frequency_factors);
    }
    return weights;
}

class DecoderModel final : public Model {
public:
    DecoderModel(ModelConfig config, DecoderSpec spec, DecoderWeights weights, ThreadPool& pool)
        : config_(std::move(config)), spec_(std::move(spec)), weights_(std::move(weights)), pool_(pool) {
        const auto threads = static_cast<size_t>(pool_.size());
        state_.attention_scratch.resize(threads * static_cast<size_t>(scratch_floats()));
        if (spec_.attention == AttentionKind::Latent)
            latent_attention_ = std::make_unique<LatentAttention>(config_, pool_);
        if (config_.experts) moe_ffn_ = std::make_unique<MoeFeedForward>(*config_.experts, spec_.activation);
    }

    const ModelConfig& config() const override { return config_; }
    std::span<const float> last_router_margins() const override { return router_margins_; }
    ExpertTraffic last_expert_traffic() const override { return expert_traffic_; }
    std::optional<std::vector<const void*>> file_data_in_use() const override {
        std::vector<const void*> in_use = {weights_.token_embeddings.data};
        for (const WeightMatrix* matrix : multiplied_matrices(const_cast<DecoderWeights&>(weights_)))
            in_use.push_back(matrix->data);  // packed and float32 copies are the model's own: not in the file
        for (const DecoderLayer& layer : weights_.layers)
            if (layer.experts) in_use.push_back(layer.experts->router.data);  // a float32 router stays in place
        return in_use;
    }

    Status forward(const Batch& batch, KvCache& cache, float* logits) override {
        // A forward that computes nothing reports no traffic and no margins, never the previous step's.
        expert_traffic_ = {};
        router_margins_.clear();
        if (auto valid = validate(batch, cache); !valid) return valid;
        const int64_t tokens = batch.size();
        if (tokens == 0) return Ok{};
        reserve_tokens(tokens);
        if (moe_ffn_) router_margins_.assign(static_cast<size_t>(tokens), std::numeric_limits<float>::infinity());
        embed(batch);
        plan_attention(batch);
        compute_rope_angles(batch);
        for (int64_t layer = 0; layer < config_.layer_count; ++layer) {
            attention_block(batch, cache, layer);
            ffn_block(tokens, weights_.layers[static_cast<size_t>(layer)]);
        }
        output_logits(batch, logits);
        return Ok{};
    }

private:
    // Per thread: attend_run's scratch, or for head sizes it does not take, attend_heads': (group,
    // context_length) scores and (group + 1, head_dim) floats.
    int64_t scratch_floats() const {
        if (attention_run_supports(config_.head_dim))
            return attention_scratch_floats(config_.group_size(), config_.head_dim);
        return config_.group_size() * config_.context_length + (config_.group_size() + 1) * config_.head_dim;
    }

    Status validate(const Batch& batch, const KvCache& cache) const {
        const KvCacheShape& shape = cache.shape();
        const KvCacheShape expected = kv_cache_shape(config_, shape.type, shape.block_size);
        if (shape.layer_count != expected.layer_count || shape.kv_head_count != expected.kv_head_count ||
            shape.head_dim != expected.head_dim || shape.latent != expected.latent || !kv_type_supported(shape.type)) {
            return Error{"forward: the KV cache's shape does not match the model"};
        }
        if (!cache_keeps_every_window(shape))
            return Error{"forward: the KV cache drops blocks a layer's attention window still reads"};
        for (const BatchToken& t : batch.tokens) {
            if (t.token < 0 || t.token >= config_.vocab_size) {
                return Error{"forward: token id " + std::to_string(t.token) + " is outside the vocabulary"};
            }
            if (t.position < 0 || t.position >= config_.context_length) {
                return Error{"forward: position " + std::to_string(t.position) + " is outside the context of " +
                             std::to_string(config_.context_length)};
            }
            if (t.position >= cache.capacity(t.sequence)) {
                return Error{"forward: sequence " + std::to_string(t.sequence) +
                             " has no KV cache block for position " + std::to_string(t.position)};
            }
        }
        return Ok{};
    }

    void reserve_tokens(int64_t tokens) {
        if (tokens <= state_.token_capacity) return;
        const auto n = static_cast<size_t>(tokens);
        state_.residual.resize(n * static_cast<size_t>(config_.embedding_dim));
        state_.normed.resize(n * static_cast<size_t>(config_.embedding_dim));
        state_.query.resize(n * static_cast<size_t>(config_.q_dim()));
        state_.key.resize(n * static_cast<size_t>(config_.kv_dim()));
        state_.value.resize(n * static_cast<size_t>(config_.kv_dim()));
        state_.attention.resize(n * static_cast<size_t>(config_.q_dim()));
        state_.projected.resize(n * static_cast<size_t>(config_.embedding_dim));
        state_.gate.resize(n * static_cast<size_t>(config_.ffn_dim));
        state_.up.resize(n * static_cast<size_t>(config_.ffn_dim));
        state_.rope_cos.resize(n * static_cast<size_t>(config_.rope_dims / 2));
        state_.rope_sin.resize(n * static_cast<size_t>(config_.rope_dims / 2));
        if (!weights_.window_rope_inverse_frequencies.empty()) {
            state_.window_rope_cos.resize(state_.rope_cos.size());
            state_.window_rope_sin.resize(state_.rope_sin.size());
        }
        state_.token_capacity = tokens;
    }

    void embed(const Batch& batch) {
        const WeightMatrix& table = weights_.token_embeddings;
        const uint64_t row_bytes = *dtype_row_bytes(table.type, static_cast<uint64_t>(table.cols));
        for (int64_t t = 0; t < batch.size(); ++t) {
            const auto* row =
                static_cast<const uint8_t*>(table.data) + row_bytes * static_cast<uint64_t>(batch.tokens[t].token);
            float* x = &state_.residual[t * config_.embedding_dim];
            dequantize_row(table.type, row, x, config_.embedding_dim);
            if (spec_.embedding_scale != 1.0f)
                for (int64_t i = 0; i < config_.embedding_dim; ++i) x[i] *= spec_.embedding_scale;
        }
    }

    // Every layer and head rotates a token by the same angles (one set per rope base: window layers may
    // have their own): compute them once per step.
    void compute_rope_angles(const Batch& batch) {
        const int64_t pairs = config_.rope_dims / 2;
        const bool window_base = !weights_.window_rope_inverse_frequencies.empty();
        for (int64_t t = 0; t < batch.size(); ++t) {
            const auto position = static_cast<float>(batch.tokens[static_cast<size_t>(t)].position);
            rope_angles(position, weights_.rope_inverse_frequencies.data(), pairs, &state_.rope_cos[t * pairs],
                        &state_.rope_sin[t * pairs]);
            if (weights_.rope_magnitude != 1.0f) {
                for (int64_t i = 0; i < pairs; ++i) {
                    state_.rope_cos[t * pairs + i] *= weights_.rope_magnitude;
                    state_.rope_sin[t * pairs + i] *= weights_.rope_magnitude;
                }
            }
            if (window_base) {
                rope_angles(position, weights_.window_rope_inverse_frequencies.data(), pairs,
                            &state_.window_rope_cos[t * pairs], &state_.window_rope_sin[t * pairs]);
            }
        }
    }

    // Whether each layer's cache keeps at least what the layer reads: a global cache layer keeps every
    // position; a window cache layer hands back what is behind its window, so it must be at least as wide.
    bool cache_keeps_every_window(const KvCacheShape& shape) const {
        if (shape.layer_windows.empty()) return true;
        for (int64_t layer = 0; layer < config_.layer_count; ++layer) {
            const int64_t kept = shape.layer_windows[static_cast<size_t>(layer)], read = attention_window(layer);
            if (kept != 0 && (read == 0 || kept < read)) return false;
        }
        return true;
    }

    // The window the KV cache was sized from (ModelConfig::layer_attention_windows, filled from the spec's
    // layers at load): one source for what attention reads and what the cache keeps.
    int64_t attention_window(int64_t layer_index) const {
        return config_.layer_attention_windows[static_cast<size_t>(layer_index)];
    }

    // The block table layer `layer_index` reads sequence `sequence` through: its layer group's, where a
    // window layer's entries behind the window are -1 (never read).
    static std::span<const int32_t> layer_block_table(const KvCache& cache, int32_t sequence, int64_t layer_index) {
        return cache.block_table(sequence, layer_index);
    }

    // body(begin, end) over the batch's tokens: split across the threads when the batch is large
    // enough to pay for waking them (prefill), in the calling thread otherwise (decode).
    template <typename Body>
    void for_tokens(int64_t tokens, const Body& body) {
        constexpr int64_t kParallelTokens = 8;
        if (tokens < kParallelTokens) {
            body(int64_t{0}, tokens);
            return;
        }
        pool_.parallel_for(tokens, body);
    }

    void normalize(int64_t tokens, const std::vector<float>& weight) {
        const int64_t dim = config_.embedding_dim;
        for_tokens(tokens, [&](int64_t begin, int64_t end) {
            for (int64_t t = begin; t < end; ++t)
                rmsnorm(&state_.residual[t * dim], weight.data(), &state_.normed[t * dim], dim, config_.rms_epsilon);
        });
    }

    // x += projected, after the block's post-norm where the family has one (`post_norm` not empty).
    void add_to_residual(int64_t tokens, const std::vector<float>& post_norm) {
        const int64_t dim = config_.embedding_dim;
        for_tokens(tokens, [&](int64_t begin, int64_t end) {
            if (!post_norm.empty()) {
                for (int64_t t = begin; t < end; ++t) {
                    float* projected = &state_.projected[t * dim];
                    rmsnorm(projected, post_norm.data(), projected, dim, config_.rms_epsilon);
                }
            }
            for (int64_t i = begin * dim; i < end * dim; ++i) state_.residual[i] += state_.projected[i];
        });
    }

    void attention_block(const Batch& batch, KvCache& cache, int64_t layer_index) {
        const DecoderLayer& layer = weights_.layers[static_cast<size_t>(layer_index)];
        const int64_t tokens = batch.size();
        normalize(tokens, layer.attention_norm);
        if (layer.latent) {
            latent_attention_->forward(*layer.latent, batch, state_.normed.data(), state_.rope_cos.data(),
                                       state_.rope_sin.data(), cache, layer_index, state_.projected.data());
            add_to_residual(tokens, layer.attention_post_norm);
            return;
        }
        const WeightMatrix* projections[] = {&layer.query, &layer.key, &layer.value};
        float* const outputs[] = {state_.query.data(), state_.key.data(), state_.value.data()};
        matmul_many(projections, state_.normed.data(), tokens, outputs, pool_);
        if (spec_.qkv_bias) add_qkv_bias(tokens, layer);

        // Rotate queries and keys by position, then store this step's keys and values in the cache.
        for_tokens(tokens,
                   [&](int64_t begin, int64_t end) { rotate_and_cache(batch, cache, layer_index, begin, end); });

        const AttentionStep step{&batch, &cache, layer_index};
        state_.next_attention_work.store(0);
        pool_.run_on_all([this, &step](int thread) { attend(step, thread); });
        matmul(layer.attention_output, state_.attention.data(), tokens, state_.projected.data(), pool_);
        if (!layer.output_bias.empty()) add_bias(tokens, layer.output_bias);
        add_to_residual(tokens, layer.attention_post_norm);
    }

    // projected (tokens, embedding_dim) += bias, each token.
    void add_bias(int64_t tokens, const std::vector<float>& bias) {
        const int64_t dim = config_.embedding_dim;
        for_tokens(tokens, [&](int64_t begin, int64_t end) {
            for (int64_t t = begin; t < end; ++t)
                for (int64_t i = 0; i < dim; ++i) state_.projected[t * dim + i] += bias[static_cast<size_t>(i)];
        });
    }

    void add_qkv_bias(int64_t tokens, const DecoderLayer& layer) {
        const int64_t q_dim = config_.q_dim(), kv_dim = config_.kv_dim();
        for_tokens(tokens, [&](int64_t begin, int64_t end) {
            for (int64_t t = begin; t < end; ++t) {
                for (int64_t i = 0; i < q_dim; ++i) state_.query[t * q_dim + i] += layer.query_bias[i];
                for (int64_t i = 0; i < kv_dim; ++i) {
                    state_.key[t * kv_dim + i] += layer.key_bias[i];
                    state_.value[t * kv_dim + i] += layer.value_bias[i];
                }
            }
        });
    }

    // Tokens [begin, end): the per-head norms of their queries and keys where the family has them, rotary
    // embedding, then their keys and values into the cache.
    void rotate_and_cache(const Batch& batch, KvCache& cache, int64_t layer_index, int64_t begin, int64_t end) {
        if (spec_.qk_norm) normalize_heads(weights_.layers[static_cast<size_t>(layer_index)], begin, end);
        const KvCache::LayerStorage storage = cache.layer_storage(layer_index);
        const KvCacheShape& shape = cache.shape();
        const int64_t head_dim = config_.head_dim, pairs = config_.rope_dims / 2;
        const RotaryPairing pairing = rotary_pairing(spec_.rope_style);
        const bool window_base = attention_window(layer_index) != 0 && !state_.window_rope_cos.empty();
        const std::vector<float>& all_cos = window_base ? state_.window_rope_cos : state_.rope_cos;
        const std::vector<float>& all_sin = window_base ? state_.window_rope_sin : state_.rope_sin;
        std::span<const int32_t> block_table;
        int32_t table_sequence = -1;  // whose table block_table is: none yet
        for (int64_t t = begin; t < end; ++t) {
            const BatchToken& token = batch.tokens[static_cast<size_t>(t)];
            const float* cos_angles = &all_cos[t * pairs];
            const float* sin_angles = &all_sin[t * pairs];
            for (int64_t h = 0; h < config_.head_count; ++h) {
                rope_rotate(&state_.query[t * config_.q_dim() + h * head_dim], config_.rope_dims, cos_angles,
                            sin_angles, pairing);
            }
            for (int64_t h = 0; h < config_.kv_head_count; ++h) {
                rope_rotate(&state_.key[t * config_.kv_dim() + h * head_dim], config_.rope_dims, cos_angles, sin_angles,
                            pairing);
            }
            if (token.sequence != table_sequence) {
                block_table = layer_block_table(cache, token.sequence, layer_index);
                table_sequence = token.sequence;
            }
            const int32_t block = block_table[static_cast<size_t>(token.position / shape.block_size)];
            store_kv_position(shape, KvLayerView{storage.keys, storage.values, storage.block_stride}, block,
                              token.position % shape.block_size, &state_.key[t * config_.kv_dim()],
                              &state_.value[t * config_.kv_dim()]);
        }
    }

    // RMSNorm of every query and key head of tokens [begin, end), before rope (Qwen3, Gemma 3).
    void normalize_heads(const DecoderLayer& layer, int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
            rmsnorm_each(&state_.query[t * config_.q_dim()], config_.head_count, layer.query_norm.data(),
                         config_.head_dim, config_.rms_epsilon);
            rmsnorm_each(&state_.key[t * config_.kv_dim()], config_.kv_head_count, layer.key_norm.data(),
                         config_.head_dim, config_.rms_epsilon);
        }
    }

    // What attend() needs, behind one pointer: a lambda of two captures fits std::function's inline
    // storage, so handing it to the pool allocates nothing.
    struct AttentionStep {
        const Batch* batch;
        KvCache* cache;
        int64_t layer_index;
    };

    // Splits the batch into runs of consecutive positions of one sequence (a prefill chunk is one run,
    // each decoding sequence a run of one), at most kMaxRunTokens long, times the KV heads. Longest
    // contexts go first, so that threads taking items in turn finish together.
    void plan_attention(const Batch& batch) {
        std::vector<AttentionWork>& work = state_.attention_work;
        work.clear();
        for (int64_t t = 0; t < batch.size();) {
            int64_t end = t + 1;
            while (end < batch.size() && end - t < kMaxRunTokens &&
                   batch.tokens[static_cast<size_t>(end)].sequence == batch.tokens[static_cast<size_t>(t)].sequence &&
                   batch.tokens[static_cast<size_t>(end)].position ==
                       batch.tokens[static_cast<size_t>(end - 1)].position + 1) {
                ++end;
            }
            for (int64_t h = 0; h < config_.kv_head_count; ++h) work.push_back({t, end - t, h});
            t = end;
        }
        std::stable_sort(work.begin(), work.end(), [&batch](const AttentionWork& a, const AttentionWork& b) {
            return batch.tokens[static_cast<size_t>(a.first_token)].position >
                   batch.tokens[static_cast<size_t>(b.first_token)].position;
        });
    }

    // Items of the step's attention plan, taken in turn by the threads.
    void attend(const AttentionStep& step, int thread) {
        const Batch& batch = *step.batch;
        KvCache& cache = *step.cache;
        const KvCache::LayerStorage storage = cache.layer_storage(step.layer_index);
        const KvCacheShape& shape = cache.shape();
        const int64_t head_dim = config_.head_dim, group = config_.group_size();
        const float scale =
            spec_.attention_scale > 0.0f ? spec_.attention_scale : 1.0f / std::sqrt(static_cast<float>(head_dim));
        float* scratch = &state_.attention_scratch[static_cast<size_t>(thread * scratch_floats())];
        const int64_t window = attention_window(step.layer_index);
        const std::vector<float>& sinks = weights_.layers[static_cast<size_t>(step.layer_index)].sinks;
        const auto items = static_cast<int64_t>(state_.attention_work.size());
        for (int64_t i = state_.next_attention_work.fetch_add(1); i < items;
             i = state_.next_attention_work.fetch_add(1)) {
            const AttentionWork& item = state_.attention_work[static_cast<size_t>(i)];
            const BatchToken& first = batch.tokens[static_cast<size_t>(item.first_token)];
            const KvHeadView view{storage.keys + shape.key_offset(0, item.kv_head, 0),
                                  storage.values + shape.value_offset(0, item.kv_head, 0),
                                  storage.block_stride,
                                  shape.slot_bytes(),
                                  shape.block_size,
                                  shape.type,
                                  storage.keys + shape.scale_offset(0, item.kv_head),
                                  storage.values + shape.scale_offset(0, item.kv_head)};
            const int64_t first_query = item.first_token * config_.q_dim() + item.kv_head * group * head_dim;
            const std::span<const int32_t> block_table = layer_block_table(cache, first.sequence, step.layer_index);
            if (attention_run_supports(head_dim)) {
                const AttentionRun run{&state_.query[first_query],
                                       &state_.attention[first_query],
                                       config_.q_dim(),
                                       item.token_count,
                                       group,
                                       head_dim,
                                       first.position,
                                       window,
                                       sinks.empty() ? nullptr : &sinks[static_cast<size_t>(item.kv_head * group)]};
                attend_run(run, view, block_table, scale, scratch);
                continue;
            }
            for (int64_t t = 0; t < item.token_count; ++t) {
                const int64_t query = first_query + t * config_.q_dim();
                attend_heads(&state_.query[query], group, head_dim, view, block_table, first.position + t + 1, window,
                             scale, scratch, &state_.attention[query]);
            }
        }
    }

    void ffn_block(int64_t tokens, const DecoderLayer& layer) {
        normalize(tokens, layer.ffn_norm);
        if (layer.experts) {
            moe_ffn_->forward(*layer.experts, state_.normed.data(), tokens, state_.projected.data(), pool_);
            for (int64_t t = 0; t < tokens; ++t) {
                float& margin = router_margins_[static_cast<size_t>(t)];
                margin = std::min(margin, moe_ffn_->last_margins()[static_cast<size_t>(t)]);
            }
            count_expert_traffic(*layer.experts);
            add_to_residual(tokens, layer.ffn_post_norm);
            return;
        }
        const WeightMatrix* projections[] = {&layer.ffn_gate, &layer.ffn_up};
        float* const outputs[] = {state_.gate.data(), state_.up.data()};
        matmul_many(projections, state_.normed.data(), tokens, outputs, pool_);
        const int64_t ffn_dim = config_.ffn_dim;
        for_tokens(tokens, [&](int64_t begin, int64_t end) {
            spec_.activation.apply(&state_.gate[begin * ffn_dim], &state_.up[begin * ffn_dim], (end - begin) * ffn_dim);
        });
        matmul(layer.ffn_down, state_.gate.data(), tokens, state_.projected.data(), pool_);
        add_to_residual(tokens, layer.ffn_post_norm);
    }

    void count_expert_traffic(const MoeLayerWeights& experts) {
        const int64_t distinct = distinct_experts(moe_ffn_->last_choices(), config_.experts->expert_count);
        expert_traffic_.weight_bytes += moe_ffn_->expert_weight_bytes_last_forward();
        expert_traffic_.read_once_bytes += distinct * one_expert_bytes(experts);
        expert_traffic_.active_experts += distinct;
    }

    // Final norm of the tokens that want logits, packed into the first rows of `normed`, then the
    // output projection straight into the caller's logits.
    void output_logits(const Batch& batch, float* logits) {
        const int64_t dim = config_.embedding_dim;
        int64_t outputs = 0;
        for (int64_t t = 0; t < batch.size(); ++t) {
            if (!batch.tokens[static_cast<size_t>(t)].wants_logits) continue;
            float* out = &state_.normed[outputs * dim];
            if (spec_.final_norm)
                rmsnorm(&state_.residual[t * dim], weights_.output_norm.data(), out, dim, config_.rms_epsilon);
            else
                std::copy_n(&state_.residual[t * dim], dim, out);
            ++outputs;
        }
        if (outputs > 0) matmul(weights_.output, state_.normed.data(), outputs, logits, pool_);
    }

    ModelConfig config_;
    DecoderSpec spec_;
    DecoderWeights weights_;
    ThreadPool& pool_;
    DecoderRunState state_;
    std::unique_ptr<LatentAttention> latent_attention_;  // AttentionKind::Latent only
    std::unique_ptr<MoeFeedForward> moe_ffn_;            // MoE files only
    std::vector<float> router_margins_;                  // (tokens): MoE files only, last_router_margins()
    ExpertTraffic expert_traffic_;                       // the last forward's, over its MoE layers
};

// What the family row leaves to the file: the per-layer windows (the family's pattern of global layers,
// the file's window size) and an embedding scale of sqrt(embedding_dim).
Status complete_from_file(DecoderSpec& spec, const ModelConfig& config) {
    if (spec.layers.empty()) spec.layers.resize(static_cast<size_t>(config.layer_count));
    if (spec.layers.size() != static_cast<size_t>(config.layer_count))
        return Error{"model: the spec describes " + std::to_string(spec.layers.size()) + " layers, the file has " +
                     std::to_string(config.layer_count)};
    if (spec.global_layer_period > 0 && config.sliding_window > 0) {
        for (int64_t i = 0; i < config.layer_count; ++i) {
            const bool global = i % spec.global_layer_period == spec.global_layer_period - 1;
            spec.layers[static_cast<size_t>(i)].attention_window = global ? 0 : config.sliding_window;
        }
    }
    if (spec.scale_embeddings_by_sqrt_dim) spec.embedding_scale = std::sqrt(static_cast<float>(config.embedding_dim));
    for (const LayerSpec& layer : spec.layers)
        if (layer.attention_window < 0) return Error{"model: a negative attention window"};
    if (spec.attention_sinks && !attention_run_supports(config.head_dim))
        return Error{"model: attention sinks need a head size that is a multiple of 16 (at most 512), not " +
                     std::to_string(config.head_dim)};
    return Ok{};
}

// Latent attention is the architecture's, not the file's to choose: a file of a standard family that
// carries kv_lora_rank would get a latent (keys-only) cache read by standard attention, and a latent
// family's file without it would leave latent attention with no sizes. The rope attention factor is
// applied by latent attention only.
Status check_attention_kind(const DecoderSpec& spec, const ModelConfig& config) {
    const bool latent = spec.attention == AttentionKind::Latent;
    if (latent && !config.latent_attention)
        return Error{"model: " + config.architecture + " needs " + config.architecture + ".attention.kv_lora_rank"};
    if (!latent && config.latent_attention)
        return Error{"model: " + config.architecture + ".attention.kv_lora_rank is supported for deepseek2 only"};
    if (!latent && config.rope_attention_factor != 1.0f)
        return Error{"model: " + config.architecture + ".rope.scaling.attn_factor is supported for deepseek2 only"};
    return Ok{};
}

}  // namespace

Result<std::unique_ptr<Model>> load_decoder(const GgufFile& file, ModelConfig config, DecoderSpec spec,
                                            const ModelOptions& options, ThreadPool& pool) {
    spec.tied_output = file.tensor("output.weight") == nullptr;
    if (auto matched = check_attention_kind(spec, config); !matched) return matched.error();
    if (auto completed = complete_from_file(spec, config); !completed) return completed.error();
    // The KV cache made for this model (kv_cache_shape) keeps only the window's blocks of window layers.
    config.layer_attention_windows.clear();
    for (const LayerSpec& layer : spec.layers) config.layer_attention_windows.push_back(layer.attention_window);
    auto weights = load_weights(file, config, spec);
    if (!weights) return weights.error();
    if (options.dequantize_weights) {
        dequantize_all(weights.value());
    } else {
        dequantize_unkerneled(weights.value());
        pack_all(weights.value(), pool);
    }
    return std::unique_ptr<Model>(
        new DecoderModel(std::move(config), std::move(spec), std::move(weights.value()), pool));
}

}  // namespace tempered
