#include "models/latent_attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <span>

#include "kernels/cpu/dequantize.h"
#include "kernels/cpu/latent_attention.h"
#include "kernels/cpu/ops.h"
#include "models/weights.h"

namespace tempered {

// Tokens the absorbed form takes at once: enough rows for the per-head matmuls' batched kernel, few
// enough that its buffers stay small.
constexpr size_t kAbsorbedSlice = 64;

namespace {

// a · b over n elements in 8 independent partial sums (summed in a fixed order at the end), so the
// compiler can keep them in vector lanes: a single running sum is a serial chain it may not reorder.
float dot_in_lanes(const float* a, const float* b, int64_t n) {
    constexpr int64_t kLanes = 8;
    float partial[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int64_t j = 0; j < kLanes; ++j) partial[j] += a[i + j] * b[i + j];
    float sum = ((partial[0] + partial[4]) + (partial[1] + partial[5])) +
                ((partial[2] + partial[6]) + (partial[3] + partial[7]));
    for (; i < n; ++i) sum += a[i] * b[i];
    return sum;
}

#define LOAD(target, expression)              \
    do {                                      \
        auto loaded_ = (expression);          \
        if (!loaded_) return loaded_.error(); \
        target = std::move(loaded_.value());  \
    } while (0)

// Rows [first, first + count) of `matrix` (GGUF layout), used in place.
WeightMatrix row_slice(const WeightMatrix& matrix, int64_t first, int64_t count) {
    const uint64_t row_bytes = *dtype_row_bytes(matrix.type, static_cast<uint64_t>(matrix.cols));
    const auto* data = static_cast<const uint8_t*>(matrix.data) + row_bytes * static_cast<uint64_t>(first);
    return WeightMatrix{matrix.type, data, count, matrix.cols};
}

// out (matrix.rows * matrix.cols) = the matrix as float, row after row.
void dequantize_into(const WeightMatrix& matrix, float* out) {
    const uint64_t row_bytes = *dtype_row_bytes(matrix.type, static_cast<uint64_t>(matrix.cols));
    for (int64_t r = 0; r < matrix.rows; ++r)
        dequantize_row(matrix.type, static_cast<const uint8_t*>(matrix.data) + row_bytes * static_cast<uint64_t>(r),
                       out + r * matrix.cols, matrix.cols);
}

// Newer files: attn_k_b (heads of (kv_lora_rank, nope_dim)) and attn_v_b (heads of (value_dim, kv_lora_rank));
// kv_b, which the expanded form multiplies by, is built from them: per head W_kb^T then W_vb.
Status load_split_kv_b(const GgufFile& file, const std::string& prefix, const ModelConfig& config,
                       LatentAttentionWeights& weights) {
    const LatentAttentionConfig& m = *config.latent_attention;
    const int64_t heads = config.head_count, rank = m.kv_lora_rank, per_head = m.nope_dim + m.value_dim;
    LOAD(weights.key_b, find_matrix_stack(file, prefix + "attn_k_b.weight", heads, rank, m.nope_dim));
    LOAD(weights.value_b, find_matrix_stack(file, prefix + "attn_v_b.weight", heads, m.value_dim, rank));
    weights.made_at_load.assign(static_cast<size_t>(heads * per_head * rank), 0.0f);
    std::vector<float> key(static_cast<size_t>(rank * m.nope_dim));
    for (int64_t h = 0; h < heads; ++h) {
        float* head = &weights.made_at_load[static_cast<size_t>(h * per_head * rank)];
        dequantize_into(weights.key_b[static_cast<size_t>(h)], key.data());
        for (int64_t i = 0; i < m.nope_dim; ++i)
            for (int64_t r = 0; r < rank; ++r) head[i * rank + r] = key[static_cast<size_t>(r * m.nope_dim + i)];
        dequantize_into(weights.value_b[static_cast<size_t>(h)], head + m.nope_dim * rank);
    }
    weights.kv_b = WeightMatrix{DType::F32, weights.made_at_load.data(), heads * per_head, rank};
    return Ok{};
}

// Older files: one attn_kv_b; W_vb is a slice of its rows, W_kb the transpose of the others (made as float).
Status load_joint_kv_b(const GgufFile& file, const std::string& prefix, const ModelConfig& config,
                       LatentAttentionWeights& weights) {
    const LatentAttentionConfig& m = *config.latent_attention;
    const int64_t heads = config.head_count, rank = m.kv_lora_rank, per_head = m.nope_dim + m.value_dim;
    LOAD(weights.kv_b, find_matrix(file, prefix + "attn_kv_b.weight", heads * per_head, rank));
    weights.made_at_load.assign(static_cast<size_t>(heads * rank * m.nope_dim), 0.0f);
    std::vector<float> key(static_cast<size_t>(m.nope_dim * rank));
    for (int64_t h = 0; h < heads; ++h) {
        dequantize_into(row_slice(weights.kv_b, h * per_head, m.nope_dim), key.data());
        float* head = &weights.made_at_load[static_cast<size_t>(h * rank * m.nope_dim)];
        for (int64_t r = 0; r < rank; ++r)
            for (int64_t i = 0; i < m.nope_dim; ++i) head[r * m.nope_dim + i] = key[static_cast<size_t>(i * rank + r)];
        weights.key_b.push_back(WeightMatrix{DType::F32, head, rank, m.nope_dim});
        weights.value_b.push_back(row_slice(weights.kv_b, h * per_head + m.nope_dim, m.value_dim));
    }
    return Ok{};
}

// The latent cache of `layer` as the kernel reads it; an F8_E4M3 cache's scales sit in each block after
// its codes, one per position.
LatentCacheView latent_cache_view(KvCache& cache, int64_t layer) {
    const KvCacheShape& shape = cache.shape();
    const KvCache::LayerStorage storage = cache.layer_storage(layer);
    return {storage.keys,   storage.block_stride, shape.block_size,
            shape.head_dim, shape.type,           shape.has_scales() ? shape.scale_offset(0, 0) : 0};
}

}  // namespace

std::vector<WeightMatrix*> LatentAttentionWeights::matrices() {
    std::vector<WeightMatrix*> all;
    for (WeightMatrix* m : {&query, &query_a, &query_b, &kv_a, &kv_b, &output})
        if (m->rows > 0) all.push_back(m);
    for (WeightMatrix& m : key_b) all.push_back(&m);
    for (WeightMatrix& m : value_b) all.push_back(&m);
    return all;
}

Result<LatentAttentionWeights> load_latent_attention(const GgufFile& file, const std::string& prefix,
                                                     const ModelConfig& config) {
    const LatentAttentionConfig& m = *config.latent_attention;
    const int64_t dim = config.embedding_dim, heads = config.head_count;
    LatentAttentionWeights weights;
    if (m.q_lora_rank > 0) {
        LOAD(weights.query_a, find_matrix(file, prefix + "attn_q_a.weight", m.q_lora_rank, dim));
        LOAD(weights.query_a_norm, find_vector(file, prefix + "attn_q_a_norm.weight", m.q_lora_rank));
        LOAD(weights.query_b, find_matrix(file, prefix + "attn_q_b.weight", heads * m.key_dim(), m.q_lora_rank));
    } else {
        LOAD(weights.query, find_matrix(file, prefix + "attn_q.weight", heads * m.key_dim(), dim));
    }
    LOAD(weights.kv_a, find_matrix(file, prefix + "attn_kv_a_mqa.weight", m.latent_width(), dim));
    LOAD(weights.kv_a_norm, find_vector(file, prefix + "attn_kv_a_norm.weight", m.kv_lora_rank));
    LOAD(weights.output, find_matrix(file, prefix + "attn_output.weight", dim, heads * m.value_dim));
    const Status kv_b = file.tensor(prefix + "attn_kv_b.weight") ? load_joint_kv_b(file, prefix, config, weights)
                                                                 : load_split_kv_b(file, prefix, config, weights);
    if (!kv_b) return kv_b.error();
    return weights;
}

#undef LOAD

LatentAttention::LatentAttention(const ModelConfig& config, ThreadPool& pool)
    : config_(config),
      latent_(*config.latent_attention),
      pool_(pool),
      scale_(latent_attention_scale(config)),
      rope_magnitude_(rope_magnitude(config)) {
    scratch_per_thread_ =
        std::max(latent_attention_scratch_floats(config.head_count, latent_.latent_width(), latent_.kv_lora_rank),
                 config.context_length);
    scratch_.resize(static_cast<size_t>(pool.size() * scratch_per_thread_));
}

void LatentAttention::reserve(int64_t tokens) {
    const auto n = static_cast<size_t>(tokens);
    const auto heads = static_cast<size_t>(config_.head_count);
    query_a_.resize(n * static_cast<size_t>(latent_.q_lora_rank));
    query_.resize(n * heads * static_cast<size_t>(latent_.key_dim()));
    kv_.resize(n * static_cast<size_t>(latent_.latent_width()));
    attention_.resize(n * heads * static_cast<size_t>(latent_.value_dim));
}

// The absorbed form's buffers, for the `tokens` tokens of one slice (kAbsorbedSlice at most), not the
// whole batch: at DeepSeek-V3's sizes they take ~600 KB per token.
void LatentAttention::reserve_absorbed(int64_t tokens) {
    const auto n = static_cast<size_t>(tokens);
    const auto heads = static_cast<size_t>(config_.head_count);
    head_floats_per_thread_ = tokens * std::max({latent_.nope_dim, latent_.kv_lora_rank, latent_.value_dim});
    head_in_.resize(static_cast<size_t>(pool_.size() * head_floats_per_thread_));
    head_out_.resize(head_in_.size());
    absorbed_.resize(n * heads * static_cast<size_t>(latent_.latent_width()));
    attended_.resize(n * heads * static_cast<size_t>(latent_.kv_lora_rank));
}

void LatentAttention::forward(const LatentAttentionWeights& weights, const Batch& batch, const float* normed,
                              const float* rope_cos, const float* rope_sin, KvCache& cache, int64_t layer, float* out) {
    const int64_t tokens = batch.size();
    reserve(tokens);
    project(weights, normed, tokens);
    rotate_and_cache(batch, rope_cos, rope_sin, cache, layer);
    plan_runs(batch);
    absorbed(weights, batch, cache, layer);
    for (const Run& run : runs_)
        if (!is_absorbed(run)) expanded(weights, batch, cache, layer, run);
    matmul(weights.output, attention_.data(), tokens, out, pool_);
}

// query (tokens, heads, key_dim) and kv (tokens, kv_lora_rank + rope_dim) from the normed inputs, the
// latent part of kv normed (attn_kv_a_norm); rope comes next.
void LatentAttention::project(const LatentAttentionWeights& weights, const float* normed, int64_t tokens) {
    const int64_t rank = latent_.kv_lora_rank, width = latent_.latent_width();
    if (latent_.q_lora_rank > 0) {
        const WeightMatrix* projections[] = {&weights.query_a, &weights.kv_a};
        float* const outputs[] = {query_a_.data(), kv_.data()};
        matmul_many(projections, normed, tokens, outputs, pool_);
        rmsnorm_each(query_a_.data(), tokens, weights.query_a_norm.data(), latent_.q_lora_rank, config_.rms_epsilon);
        matmul(weights.query_b, query_a_.data(), tokens, query_.data(), pool_);
    } else {
        const WeightMatrix* projections[] = {&weights.query, &weights.kv_a};
        float* const outputs[] = {query_.data(), kv_.data()};
        matmul_many(projections, normed, tokens, outputs, pool_);
    }
    for (int64_t t = 0; t < tokens; ++t)
        rmsnorm(&kv_[t * width], weights.kv_a_norm.data(), &kv_[t * width], rank, config_.rms_epsilon);
}

// Rope (adjacent pairs, scaled by YaRN's magnitude) on the rope part of every query head and of the
// shared rope key, then each token's latent row into the cache.
void LatentAttention::rotate_and_cache(const Batch& batch, const float* rope_cos, const float* rope_sin, KvCache& cache,
                                       int64_t layer) {
    const int64_t heads = config_.head_count, key_dim = latent_.key_dim(), rope = latent_.rope_dim;
    const int64_t width = latent_.latent_width(), pairs = rope / 2;
    const KvCacheShape& shape = cache.shape();
    const KvCache::LayerStorage storage = cache.layer_storage(layer);
    for (int64_t t = 0; t < batch.size(); ++t) {
        const BatchToken& token = batch.tokens[static_cast<size_t>(t)];
        float* rope_parts[] = {&kv_[t * width + latent_.kv_lora_rank]};
        auto rotate = [&](float* x) {
            rope_rotate(x, rope, &rope_cos[t * pairs], &rope_sin[t * pairs], RotaryPairing::AdjacentElements);
            if (rope_magnitude_ != 1.0f)
                for (int64_t i = 0; i < rope; ++i) x[i] *= rope_magnitude_;
        };
        rotate(rope_parts[0]);
        for (int64_t h = 0; h < heads; ++h) rotate(&query_[(t * heads + h) * key_dim + latent_.nope_dim]);
        const std::span<const int32_t> table = cache.block_table(token.sequence, layer);
        const int32_t block = table[static_cast<size_t>(token.position / shape.block_size)];
        store_kv_position(shape, KvLayerView{storage.keys, nullptr, storage.block_stride}, block,
                          token.position % shape.block_size, &kv_[t * width], nullptr);
    }
}

// Runs of consecutive positions of one sequence: a prefill chunk is one run, each decoding sequence one.
void LatentAttention::plan_runs(const Batch& batch) {
    runs_.clear();
    for (int64_t t = 0; t < batch.size();) {
        int64_t end = t + 1;
        while (end < batch.size() &&
               batch.tokens[static_cast<size_t>(end)].sequence == batch.tokens[static_cast<size_t>(t)].sequence &&
               batch.tokens[static_cast<size_t>(end)].position ==
                   batch.tokens[static_cast<size_t>(end - 1)].position + 1)
            ++end;
        runs_.push_back({t, end - t});
        t = end;
    }
}

bool LatentAttention::is_absorbed(const Run&) const { return form_ != LatentAttentionForm::Expanded; }

// The absorbed form for every token of an absorbed run, kAbsorbedSlice tokens at a time (its buffers hold
// heads * (latent_width + kv_lora_rank) floats per token: ~600 KB at DeepSeek-V3's sizes): queries into the
// latent space (W_kb per head), attention over the cached rows, the attended latent through W_vb per head.
// Each stage is one dispatch
// of the threads: whole heads per thread for the per-head matmuls (each a few rows at decode, too small
// to split), and the attention itself over tokens, split by heads when there are fewer tokens than threads.
void LatentAttention::absorbed(const LatentAttentionWeights& weights, const Batch& batch, KvCache& cache,
                               int64_t layer) {
    std::vector<int64_t>& chosen = absorbed_tokens_;
    chosen.clear();
    for (const Run& run : runs_)
        if (is_absorbed(run))
            for (int64_t t = run.first_token; t < run.first_token + run.token_count; ++t) chosen.push_back(t);
    for (size_t begin = 0; begin < chosen.size(); begin += kAbsorbedSlice) {
        const std::span<const int64_t> slice(chosen.data() + begin, std::min(kAbsorbedSlice, chosen.size() - begin));
        reserve_absorbed(static_cast<int64_t>(slice.size()));
        absorb_queries(weights, slice);
        attend_absorbed(batch, cache, layer, slice);
        expand_values(weights, slice);
    }
}

// absorbed (n, heads, width) = [q_nope · W_kb | q_rope] of each chosen token and head.
void LatentAttention::absorb_queries(const LatentAttentionWeights& weights, std::span<const int64_t> chosen) {
    const auto n = static_cast<int64_t>(chosen.size());
    const int64_t heads = config_.head_count, key_dim = latent_.key_dim(), nope = latent_.nope_dim;
    const int64_t rank = latent_.kv_lora_rank, width = latent_.latent_width();
    whole_heads_.run(pool_, heads, [&](int64_t h, int thread, ThreadPool& own) {
        float* head_in = &head_in_[static_cast<size_t>(thread * head_floats_per_thread_)];
        float* head_out = &head_out_[static_cast<size_t>(thread * head_floats_per_thread_)];
        for (int64_t i = 0; i < n; ++i)
            std::copy_n(&query_[(chosen[i] * heads + h) * key_dim], nope, &head_in[i * nope]);
        matmul(weights.key_b[static_cast<size_t>(h)], head_in, n, head_out, own);
        for (int64_t i = 0; i < n; ++i) {
            float* q = &absorbed_[(i * heads + h) * width];
            std::copy_n(&head_out[i * rank], rank, q);
            std::copy_n(&query_[(chosen[i] * heads + h) * key_dim + nope], latent_.rope_dim, q + rank);
        }
    });
}

// attended (n, heads, kv_lora_rank) over each chosen token's cached rows. A token's heads are split into
// one group per thread when there are fewer tokens than threads; each head's sums are its own, so the
// split does not change them.
void LatentAttention::attend_absorbed(const Batch& batch, KvCache& cache, int64_t layer,
                                      std::span<const int64_t> chosen) {
    const auto n = static_cast<int64_t>(chosen.size());
    const int64_t heads = config_.head_count, rank = latent_.kv_lora_rank, width = latent_.latent_width();
    const int64_t groups = std::min<int64_t>(n < pool_.size() ? pool_.size() : 1, heads);
    const int64_t heads_per_group = (heads + groups - 1) / groups;
    const LatentCacheView view = latent_cache_view(cache, layer);
    std::atomic<int64_t> next{0};
    pool_.run_on_all([&](int thread) {
        float* scratch = &scratch_[static_cast<size_t>(thread * scratch_per_thread_)];
        for (int64_t item = next.fetch_add(1); item < n * groups; item = next.fetch_add(1)) {
            const int64_t i = item / groups, first_head = item % groups * heads_per_group;
            const int64_t group_heads = std::min(heads_per_group, heads - first_head);
            if (group_heads <= 0) continue;
            const BatchToken& token = batch.tokens[static_cast<size_t>(chosen[i])];
            attend_latent(&absorbed_[(i * heads + first_head) * width], group_heads, view,
                          cache.block_table(token.sequence, layer), token.position + 1, rank, scale_, scratch,
                          &attended_[(i * heads + first_head) * rank]);
        }
    });
}

// attention (tokens, heads * value_dim) of each chosen token = its attended latent · W_vb^T per head.
void LatentAttention::expand_values(const LatentAttentionWeights& weights, std::span<const int64_t> chosen) {
    const auto n = static_cast<int64_t>(chosen.size());
    const int64_t heads = config_.head_count, rank = latent_.kv_lora_rank, value_dim = latent_.value_dim;
    whole_heads_.run(pool_, heads, [&](int64_t h, int thread, ThreadPool& own) {
        float* head_in = &head_in_[static_cast<size_t>(thread * head_floats_per_thread_)];
        float* head_out = &head_out_[static_cast<size_t>(thread * head_floats_per_thread_)];
        for (int64_t i = 0; i < n; ++i) std::copy_n(&attended_[(i * heads + h) * rank], rank, &head_in[i * rank]);
        matmul(weights.value_b[static_cast<size_t>(h)], head_in, n, head_out, own);
        for (int64_t i = 0; i < n; ++i)
            std::copy_n(&head_out[i * value_dim], value_dim, &attention_[(chosen[i] * heads + h) * value_dim]);
    });
}

// The expanded form for one run: every cached position's latent decompressed by kv_b into per-head keys
// (nope part) and values, then causal multi-head attention with the shared rope key.
void LatentAttention::expanded(const LatentAttentionWeights& weights, const Batch& batch, KvCache& cache, int64_t layer,
                               const Run& run) {
    const BatchToken& first = batch.tokens[static_cast<size_t>(run.first_token)];
    const int64_t length = first.position + run.token_count;
    const int64_t heads = config_.head_count, key_dim = latent_.key_dim(), nope = latent_.nope_dim;
    const int64_t rank = latent_.kv_lora_rank, width = latent_.latent_width(), value_dim = latent_.value_dim;
    const int64_t per_head = nope + value_dim;
    rows_.resize(static_cast<size_t>(length * width));
    latents_.resize(static_cast<size_t>(length * rank));
    expanded_kv_.resize(static_cast<size_t>(length * heads * per_head));
    const LatentCacheView view = latent_cache_view(cache, layer);
    gather_latent_rows(view, cache.block_table(first.sequence, layer), 0, length, rows_.data());
    for (int64_t p = 0; p < length; ++p) std::copy_n(&rows_[p * width], rank, &latents_[p * rank]);
    matmul(weights.kv_b, latents_.data(), length, expanded_kv_.data(), pool_);
    const int64_t items = heads * run.token_count;
    std::atomic<int64_t> next{0};
    pool_.run_on_all([&](int thread) {
        float* scores = &scratch_[static_cast<size_t>(thread * scratch_per_thread_)];
        for (int64_t item = next.fetch_add(1); item < items; item = next.fetch_add(1)) {
            const int64_t h = item % heads, t = run.first_token + item / heads;
            const int64_t visible = batch.tokens[static_cast<size_t>(t)].position + 1;
            const float* q = &query_[(t * heads + h) * key_dim];
            for (int64_t p = 0; p < visible; ++p) {
                const float* key = &expanded_kv_[(p * heads + h) * per_head];
                const float* rope_key = &rows_[p * width + rank];
                scores[p] = (dot_in_lanes(q, key, nope) + dot_in_lanes(q + nope, rope_key, latent_.rope_dim)) * scale_;
            }
            softmax(scores, visible);
            float* out = &attention_[(t * heads + h) * value_dim];
            std::fill_n(out, value_dim, 0.0f);
            for (int64_t p = 0; p < visible; ++p) {
                const float* value = &expanded_kv_[(p * heads + h) * per_head + nope];
                for (int64_t i = 0; i < value_dim; ++i) out[i] += scores[p] * value[i];
            }
        }
    });
}

}  // namespace tempered
