#include "models/llama.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/cpu/dequantize.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/ops.h"
#include "models/weights.h"

namespace tempered {
namespace {

struct LlamaLayer {
    std::vector<float> attention_norm;  // (embedding_dim)
    WeightMatrix query;                 // (q_dim, embedding_dim)
    WeightMatrix key;                   // (kv_dim, embedding_dim)
    WeightMatrix value;                 // (kv_dim, embedding_dim)
    WeightMatrix attention_output;      // (embedding_dim, q_dim)
    std::vector<float> ffn_norm;        // (embedding_dim)
    WeightMatrix ffn_gate;              // (ffn_dim, embedding_dim)
    WeightMatrix ffn_up;                // (ffn_dim, embedding_dim)
    WeightMatrix ffn_down;              // (embedding_dim, ffn_dim)
};

struct LlamaWeights {
    WeightMatrix token_embeddings;   // (vocab_size, embedding_dim)
    std::vector<LlamaLayer> layers;  // (layer_count)
    std::vector<float> output_norm;  // (embedding_dim)
    WeightMatrix output;             // (vocab_size, embedding_dim); token_embeddings when tied
    std::vector<float> rope_inverse_frequencies;  // (rope_dims / 2): angle of pair i = position * this[i]
    std::vector<std::vector<float>> dequantized;  // owners of the matrices when ModelOptions::dequantize_weights
};

// Points every matrix but the embedding table (looked up row by row, exactly) at a float32 copy.
void dequantize_all(LlamaWeights& weights) {
    std::vector<WeightMatrix*> matrices = {&weights.output};
    for (LlamaLayer& layer : weights.layers) {
        for (WeightMatrix* m : {&layer.query, &layer.key, &layer.value, &layer.attention_output, &layer.ffn_gate,
                                &layer.ffn_up, &layer.ffn_down}) {
            matrices.push_back(m);
        }
    }
    weights.dequantized.resize(matrices.size());
    for (size_t i = 0; i < matrices.size(); ++i) dequantize_matrix(*matrices[i], weights.dequantized[i]);
}

// Activations of one step, sized for `token_capacity` tokens and grown only when a batch is larger.
struct LlamaRunState {
    int64_t token_capacity = 0;
    std::vector<float> residual;   // (tokens, embedding_dim): the residual stream x
    std::vector<float> normed;     // (tokens, embedding_dim): rmsnorm(x), the input of each matmul
    std::vector<float> query;      // (tokens, q_dim)
    std::vector<float> key;        // (tokens, kv_dim)
    std::vector<float> value;      // (tokens, kv_dim)
    std::vector<float> attention;  // (tokens, q_dim): attention output, heads side by side
    std::vector<float> projected;  // (tokens, embedding_dim): output of attention_output and ffn_down
    std::vector<float> gate;       // (tokens, ffn_dim), then silu(gate) * up
    std::vector<float> up;         // (tokens, ffn_dim)
    std::vector<float> attention_scratch;  // (threads, scratch_floats()): see attend_heads
};

Result<LlamaWeights> load_weights(const GgufFile& file, const ModelConfig& config) {
    LlamaWeights weights;
    const int64_t dim = config.embedding_dim;
#define LOAD(target, expression)                       \
    do {                                               \
        auto loaded_ = (expression);                   \
        if (!loaded_) return loaded_.error();          \
        target = std::move(loaded_.value());           \
    } while (0)
    LOAD(weights.token_embeddings, find_matrix(file, "token_embd.weight", config.vocab_size, dim));
    LOAD(weights.output_norm, find_vector(file, "output_norm.weight", dim));
    weights.output = weights.token_embeddings;
    if (file.tensor("output.weight")) LOAD(weights.output, find_matrix(file, "output.weight", config.vocab_size, dim));
    weights.layers.resize(static_cast<size_t>(config.layer_count));
    for (int64_t i = 0; i < config.layer_count; ++i) {
        const std::string prefix = "blk." + std::to_string(i) + ".";
        LlamaLayer& layer = weights.layers[static_cast<size_t>(i)];
        LOAD(layer.attention_norm, find_vector(file, prefix + "attn_norm.weight", dim));
        LOAD(layer.query, find_matrix(file, prefix + "attn_q.weight", config.q_dim(), dim));
        LOAD(layer.key, find_matrix(file, prefix + "attn_k.weight", config.kv_dim(), dim));
        LOAD(layer.value, find_matrix(file, prefix + "attn_v.weight", config.kv_dim(), dim));
        LOAD(layer.attention_output, find_matrix(file, prefix + "attn_output.weight", dim, config.q_dim()));
        LOAD(layer.ffn_norm, find_vector(file, prefix + "ffn_norm.weight", dim));
        LOAD(layer.ffn_gate, find_matrix(file, prefix + "ffn_gate.weight", config.ffn_dim, dim));
        LOAD(layer.ffn_up, find_matrix(file, prefix + "ffn_up.weight", config.ffn_dim, dim));
        LOAD(layer.ffn_down, find_matrix(file, prefix + "ffn_down.weight", dim, config.ffn_dim));
        for (const char* bias : {"attn_q.bias", "attn_k.bias", "attn_v.bias", "attn_output.bias"}) {
            if (file.tensor(prefix + bias)) return Error{"model: llama tensor " + prefix + bias + " is not supported"};
        }
    }
    // Inverse frequencies base^(-2i/rope_dims), divided by the linear scaling factor and, for Llama 3
    // style files, by the per-pair factors of rope_freqs.weight.
    const int64_t pairs = config.rope_dims / 2;
    std::vector<float> frequency_factors(static_cast<size_t>(pairs), 1.0f);
    if (file.tensor("rope_freqs.weight")) LOAD(frequency_factors, find_vector(file, "rope_freqs.weight", pairs));
#undef LOAD
    for (int64_t i = 0; i < pairs; ++i) {
        const double inverse = std::pow(static_cast<double>(config.rope_freq_base),
                                        -2.0 * static_cast<double>(i) / static_cast<double>(config.rope_dims));
        weights.rope_inverse_frequencies.push_back(
            static_cast<float>(inverse / config.rope_scaling_factor / frequency_factors[static_cast<size_t>(i)]));
    }
    return weights;
}

class LlamaModel final : public Model {
public:
    LlamaModel(ModelConfig config, LlamaWeights weights, ThreadPool& pool)
        : config_(std::move(config)), weights_(std::move(weights)), pool_(pool) {
        const auto threads = static_cast<size_t>(pool_.size());
        state_.attention_scratch.resize(threads * static_cast<size_t>(scratch_floats()));
    }

    const ModelConfig& config() const override { return config_; }

    Status forward(const Batch& batch, KvCache& cache, float* logits) override {
        if (auto valid = validate(batch, cache); !valid) return valid;
        const int64_t tokens = batch.size();
        if (tokens == 0) return Ok{};
        reserve_tokens(tokens);
        embed(batch);
        for (int64_t layer = 0; layer < config_.layer_count; ++layer) {
            attention_block(batch, cache, layer);
            ffn_block(tokens, weights_.layers[static_cast<size_t>(layer)]);
        }
        output_logits(batch, logits);
        return Ok{};
    }

private:
    // Per thread, for attend_heads: (group, context_length) scores and (group + 1, head_dim) floats.
    int64_t scratch_floats() const {
        return config_.group_size() * config_.context_length + (config_.group_size() + 1) * config_.head_dim;
    }

    Status validate(const Batch& batch, const KvCache& cache) const {
        const KvCacheShape& shape = cache.shape();
        if (shape.layer_count != config_.layer_count || shape.kv_head_count != config_.kv_head_count ||
            shape.head_dim != config_.head_dim || !kv_type_supported(shape.type)) {
            return Error{"forward: the KV cache's shape does not match the model"};
        }
        for (const BatchToken& t : batch.tokens) {
            if (t.token < 0 || t.token >= config_.vocab_size) {
                return Error{"forward: token id " + std::to_string(t.token) + " is outside the vocabulary"};
            }
            if (t.position < 0 || t.position >= config_.context_length) {
                return Error{"forward: position " + std::to_string(t.position) + " is outside the context of " +
                             std::to_string(config_.context_length)};
            }
            if (t.position >= cache.capacity(t.sequence)) {
                return Error{"forward: sequence " + std::to_string(t.sequence) + " has no KV cache block for position " +
                             std::to_string(t.position)};
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
        state_.token_capacity = tokens;
    }

    void embed(const Batch& batch) {
        const WeightMatrix& table = weights_.token_embeddings;
        const uint64_t row_bytes = *dtype_row_bytes(table.type, static_cast<uint64_t>(table.cols));
        for (int64_t t = 0; t < batch.size(); ++t) {
            const auto* row = static_cast<const uint8_t*>(table.data) + row_bytes * static_cast<uint64_t>(batch.tokens[t].token);
            dequantize_row(table.type, row, &state_.residual[t * config_.embedding_dim], config_.embedding_dim);
        }
    }

    void normalize(int64_t tokens, const std::vector<float>& weight) {
        const int64_t dim = config_.embedding_dim;
        for (int64_t t = 0; t < tokens; ++t) {
            rmsnorm(&state_.residual[t * dim], weight.data(), &state_.normed[t * dim], dim, config_.rms_epsilon);
        }
    }

    void add_to_residual(int64_t tokens) {
        const int64_t count = tokens * config_.embedding_dim;
        for (int64_t i = 0; i < count; ++i) state_.residual[i] += state_.projected[i];
    }

    void attention_block(const Batch& batch, KvCache& cache, int64_t layer_index) {
        const LlamaLayer& layer = weights_.layers[static_cast<size_t>(layer_index)];
        const int64_t tokens = batch.size(), head_dim = config_.head_dim;
        normalize(tokens, layer.attention_norm);
        matmul(layer.query, state_.normed.data(), tokens, state_.query.data(), pool_);
        matmul(layer.key, state_.normed.data(), tokens, state_.key.data(), pool_);
        matmul(layer.value, state_.normed.data(), tokens, state_.value.data(), pool_);

        // Rotate queries and keys by position, then store this step's keys and values in the cache.
        const KvCache::LayerStorage storage = cache.layer_storage(layer_index);
        const KvCacheShape& shape = cache.shape();
        for (int64_t t = 0; t < tokens; ++t) {
            const BatchToken& token = batch.tokens[static_cast<size_t>(t)];
            const float position = static_cast<float>(token.position);
            for (int64_t h = 0; h < config_.head_count; ++h) {
                rope(&state_.query[t * config_.q_dim() + h * head_dim], config_.rope_dims, position,
                     weights_.rope_inverse_frequencies.data(), config_.rope_style);
            }
            for (int64_t h = 0; h < config_.kv_head_count; ++h) {
                rope(&state_.key[t * config_.kv_dim() + h * head_dim], config_.rope_dims, position,
                     weights_.rope_inverse_frequencies.data(), config_.rope_style);
            }
            const int32_t block = cache.block_table(token.sequence)[static_cast<size_t>(token.position / shape.block_size)];
            const int64_t offset = block * storage.block_stride + (token.position % shape.block_size) * shape.slot_bytes();
            float_to_kv(shape.type, &state_.key[t * config_.kv_dim()], storage.keys + offset, config_.kv_dim());
            float_to_kv(shape.type, &state_.value[t * config_.kv_dim()], storage.values + offset, config_.kv_dim());
        }

        const AttentionStep step{&batch, &cache, layer_index};
        pool_.run_on_all([this, &step](int thread) { attend(step, thread); });
        matmul(layer.attention_output, state_.attention.data(), tokens, state_.projected.data(), pool_);
        add_to_residual(tokens);
    }

    // What attend() needs, behind one pointer: a lambda of two captures fits std::function's inline
    // storage, so handing it to the pool allocates nothing.
    struct AttentionStep {
        const Batch* batch;
        KvCache* cache;
        int64_t layer_index;
    };

    // Thread `thread`'s share of the (token, KV head) pairs: each attends with its group of query heads
    // over the token's own sequence.
    void attend(const AttentionStep& step, int thread) {
        const Batch& batch = *step.batch;
        KvCache& cache = *step.cache;
        const int64_t layer_index = step.layer_index;
        const KvCache::LayerStorage storage = cache.layer_storage(layer_index);
        const KvCacheShape& shape = cache.shape();
        const int64_t head_dim = config_.head_dim, group = config_.group_size();
        const int64_t element_bytes = static_cast<int64_t>(dtype_traits(shape.type).block_bytes);
        const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
        const int64_t items = batch.size() * config_.kv_head_count, threads = pool_.size();
        float* scratch = &state_.attention_scratch[static_cast<size_t>(thread * scratch_floats())];
        for (int64_t item = items * thread / threads; item < items * (thread + 1) / threads; ++item) {
            const int64_t t = item / config_.kv_head_count, kv_head = item % config_.kv_head_count;
            const BatchToken& token = batch.tokens[static_cast<size_t>(t)];
            const int64_t head_offset = kv_head * head_dim * element_bytes;
            const KvHeadView view{storage.keys + head_offset, storage.values + head_offset, storage.block_stride,
                                  shape.slot_bytes(), shape.block_size, shape.type};
            const int64_t first_query = t * config_.q_dim() + kv_head * group * head_dim;
            attend_heads(&state_.query[first_query], group, head_dim, view, cache.block_table(token.sequence),
                         token.position + 1, scale, scratch, &state_.attention[first_query]);
        }
    }

    void ffn_block(int64_t tokens, const LlamaLayer& layer) {
        normalize(tokens, layer.ffn_norm);
        matmul(layer.ffn_gate, state_.normed.data(), tokens, state_.gate.data(), pool_);
        matmul(layer.ffn_up, state_.normed.data(), tokens, state_.up.data(), pool_);
        swiglu(state_.gate.data(), state_.up.data(), state_.gate.data(), tokens * config_.ffn_dim);
        matmul(layer.ffn_down, state_.gate.data(), tokens, state_.projected.data(), pool_);
        add_to_residual(tokens);
    }

    // Final norm of the tokens that want logits, packed into the first rows of `normed`, then the
    // output projection straight into the caller's logits.
    void output_logits(const Batch& batch, float* logits) {
        const int64_t dim = config_.embedding_dim;
        int64_t outputs = 0;
        for (int64_t t = 0; t < batch.size(); ++t) {
            if (!batch.tokens[static_cast<size_t>(t)].wants_logits) continue;
            rmsnorm(&state_.residual[t * dim], weights_.output_norm.data(), &state_.normed[outputs * dim], dim,
                    config_.rms_epsilon);
            ++outputs;
        }
        if (outputs > 0) matmul(weights_.output, state_.normed.data(), outputs, logits, pool_);
    }

    ModelConfig config_;
    LlamaWeights weights_;
    ThreadPool& pool_;
    LlamaRunState state_;
};

}  // namespace

Result<std::unique_ptr<Model>> load_llama(const GgufFile& file, ModelConfig config, const ModelOptions& options,
                                          ThreadPool& pool) {
    auto weights = load_weights(file, config);
    if (!weights) return weights.error();
    if (options.dequantize_weights) dequantize_all(weights.value());
    return std::unique_ptr<Model>(new LlamaModel(std::move(config), std::move(weights.value()), pool));
}

}  // namespace tempered
