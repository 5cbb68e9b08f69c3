#include "models/moe_ffn.h"

#include <algorithm>

#include "kernels/cpu/dequantize.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/packed_weights.h"
#include "models/weights.h"

namespace tempered {
namespace {

// The router as float32: routing compares scores, so they are computed without activation quantization.
Result<WeightMatrix> load_router(const GgufFile& file, const std::string& name, int64_t experts, int64_t dim,
                                 std::shared_ptr<const std::vector<float>>& storage) {
    auto router = find_matrix(file, name, experts, dim);
    if (!router || router->type == DType::F32) return router;
    auto copy = std::make_shared<std::vector<float>>();
    dequantize_matrix(*router, *copy);
    storage = std::move(copy);
    return router;
}

// rows (count, width) += bias (width), each row.
void add_row_bias(float* rows, int64_t count, const float* bias, int64_t width) {
    for (int64_t r = 0; r < count; ++r)
        for (int64_t i = 0; i < width; ++i) rows[r * width + i] += bias[i];
}

}  // namespace

std::vector<WeightMatrix*> MoeLayerWeights::matrices() {
    std::vector<WeightMatrix*> all;
    for (auto* experts : {&gate, &up, &down})
        for (WeightMatrix& m : *experts) all.push_back(&m);
    if (has_shared_experts())
        for (WeightMatrix* m : {&shared_gate, &shared_up, &shared_down}) all.push_back(m);
    return all;
}

int64_t matrix_bytes(const WeightMatrix& matrix) {
    if (matrix.layout == WeightLayout::Packed16) return packed_bytes(matrix);
    return static_cast<int64_t>(*dtype_row_bytes(matrix.type, static_cast<uint64_t>(matrix.cols))) * matrix.rows;
}

int64_t one_expert_bytes(const MoeLayerWeights& weights) {
    if (weights.gate.empty()) return 0;
    return matrix_bytes(weights.gate[0]) + matrix_bytes(weights.up[0]) + matrix_bytes(weights.down[0]);
}

int64_t distinct_experts(const std::vector<ExpertChoice>& choices, int64_t expert_count) {
    std::vector<bool> seen(static_cast<size_t>(expert_count), false);
    int64_t distinct = 0;
    for (const ExpertChoice& choice : choices) {
        if (seen[static_cast<size_t>(choice.expert)]) continue;
        seen[static_cast<size_t>(choice.expert)] = true;
        ++distinct;
    }
    return distinct;
}

Result<MoeLayerWeights> load_moe_layer(const GgufFile& file, const std::string& prefix, int64_t embedding_dim,
                                       const MoeConfig& config) {
    if (auto valid = validate_moe_config(config); !valid) return valid.error();
    MoeLayerWeights weights;
    const int64_t experts = config.expert_count;
    const int64_t width = config.expert_ffn_dim;
#define MOE_LOAD(target, expression)          \
    do {                                      \
        auto loaded_ = (expression);          \
        if (!loaded_) return loaded_.error(); \
        target = std::move(loaded_.value());  \
    } while (0)
    MOE_LOAD(weights.router,
             load_router(file, prefix + "ffn_gate_inp.weight", experts, embedding_dim, weights.router_storage));
    if (file.tensor(prefix + "exp_probs_b.bias"))
        MOE_LOAD(weights.correction_bias, find_vector(file, prefix + "exp_probs_b.bias", experts));
    if (file.tensor(prefix + "ffn_gate_inp.bias"))
        MOE_LOAD(weights.router_bias, find_vector(file, prefix + "ffn_gate_inp.bias", experts));
    if (file.tensor(prefix + "ffn_gate_exps.bias") || file.tensor(prefix + "ffn_up_exps.bias") ||
        file.tensor(prefix + "ffn_down_exps.bias")) {
        MOE_LOAD(weights.gate_bias, find_table(file, prefix + "ffn_gate_exps.bias", experts, width));
        MOE_LOAD(weights.up_bias, find_table(file, prefix + "ffn_up_exps.bias", experts, width));
        MOE_LOAD(weights.down_bias, find_table(file, prefix + "ffn_down_exps.bias", experts, embedding_dim));
    }
    if (file.tensor(prefix + "ffn_gate_up_exps.weight"))
        return Error{"model: fused " + prefix + "ffn_gate_up_exps.weight is not supported (split gate/up expected)"};
    MOE_LOAD(weights.gate, find_matrix_stack(file, prefix + "ffn_gate_exps.weight", experts, width, embedding_dim));
    MOE_LOAD(weights.up, find_matrix_stack(file, prefix + "ffn_up_exps.weight", experts, width, embedding_dim));
    MOE_LOAD(weights.down, find_matrix_stack(file, prefix + "ffn_down_exps.weight", experts, embedding_dim, width));
    if (config.shared_expert_count > 0) {
        const int64_t shared = config.shared_expert_count * width;
        MOE_LOAD(weights.shared_gate, find_matrix(file, prefix + "ffn_gate_shexp.weight", shared, embedding_dim));
        MOE_LOAD(weights.shared_up, find_matrix(file, prefix + "ffn_up_shexp.weight", shared, embedding_dim));
        MOE_LOAD(weights.shared_down, find_matrix(file, prefix + "ffn_down_shexp.weight", embedding_dim, shared));
    } else if (file.tensor(prefix + "ffn_gate_shexp.weight")) {
        return Error{"model: " + prefix + "ffn_gate_shexp.weight is present but expert_shared_count is 0"};
    }
#undef MOE_LOAD
    return weights;
}

void MoeFeedForward::forward(const MoeLayerWeights& weights, const float* normed, int64_t tokens, float* out,
                             ThreadPool& pool) {
    const int64_t dim = weights.router.cols;
    expert_bytes_ = 0;
    if (tokens == 0) return;
    route(weights, normed, tokens, pool);
    group_by_expert(tokens);
    gather(normed, dim, pool);
    run_experts(weights, pool);
    run_shared(weights, normed, tokens, out, pool);
    scatter(tokens, dim, out, pool);
}

void MoeFeedForward::route(const MoeLayerWeights& weights, const float* normed, int64_t tokens, ThreadPool& pool) {
    router_logits_.resize(static_cast<size_t>(tokens * config_.expert_count));
    matmul(weights.router, normed, tokens, router_logits_.data(), pool);
    if (!weights.router_bias.empty())
        for (int64_t t = 0; t < tokens; ++t)
            for (int64_t e = 0; e < config_.expert_count; ++e)
                router_logits_[static_cast<size_t>(t * config_.expert_count + e)] +=
                    weights.router_bias[static_cast<size_t>(e)];
    choices_.resize(static_cast<size_t>(tokens * config_.experts_per_token));
    margins_.resize(static_cast<size_t>(tokens));
    const float* bias = weights.correction_bias.empty() ? nullptr : weights.correction_bias.data();
    route_experts(config_, router_logits_.data(), bias, tokens, choices_.data(), margins_.data());
}

// A counting sort of the (token, choice) pairs by expert, tokens in order within an expert.
void MoeFeedForward::group_by_expert(int64_t tokens) {
    const int64_t per_token = config_.experts_per_token;
    expert_begin_.assign(static_cast<size_t>(config_.expert_count + 1), 0);
    for (const ExpertChoice& choice : choices_) ++expert_begin_[static_cast<size_t>(choice.expert) + 1];
    for (size_t e = 1; e < expert_begin_.size(); ++e) expert_begin_[e] += expert_begin_[e - 1];
    std::vector<int64_t>& next = next_row_;
    next.assign(expert_begin_.begin(), expert_begin_.end() - 1);
    row_token_.resize(static_cast<size_t>(tokens * per_token));
    choice_row_.resize(row_token_.size());
    for (int64_t t = 0; t < tokens; ++t) {
        for (int64_t j = 0; j < per_token; ++j) {
            const auto choice = static_cast<size_t>(t * per_token + j);
            const int64_t row = next[static_cast<size_t>(choices_[choice].expert)]++;
            row_token_[static_cast<size_t>(row)] = t;
            choice_row_[choice] = row;
        }
    }
}

void MoeFeedForward::gather(const float* normed, int64_t dim, ThreadPool& pool) {
    const auto rows = static_cast<int64_t>(row_token_.size());
    gathered_.resize(static_cast<size_t>(rows * dim));
    pool.parallel_for_dynamic(rows, kRowsPerCopyTask, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r)
            std::copy_n(normed + row_token_[static_cast<size_t>(r)] * dim, dim,
                        &gathered_[static_cast<size_t>(r * dim)]);
    });
}

// Expert e's rows through gate and up (one matmul_many), SwiGLU, then down, on `pool`.
void MoeFeedForward::run_expert(const MoeLayerWeights& weights, size_t e, ThreadPool& pool) {
    const int64_t first = expert_begin_[e];
    const int64_t count = expert_begin_[e + 1] - first;
    const int64_t width = config_.expert_ffn_dim;
    const int64_t dim = weights.router.cols;
    float* gate = &gate_[static_cast<size_t>(first * width)];
    const WeightMatrix* projections[] = {&weights.gate[e], &weights.up[e]};
    float* const outputs[] = {gate, &up_[static_cast<size_t>(first * width)]};
    matmul_many(projections, &gathered_[static_cast<size_t>(first * dim)], count, outputs, pool);
    if (!weights.gate_bias.empty()) {
        add_row_bias(gate, count, &weights.gate_bias[e * static_cast<size_t>(width)], width);
        add_row_bias(outputs[1], count, &weights.up_bias[e * static_cast<size_t>(width)], width);
    }
    activation_.apply(gate, outputs[1], count * width);
    float* out = &expert_out_[static_cast<size_t>(first * dim)];
    matmul(weights.down[e], gate, count, out, pool);
    if (!weights.down_bias.empty()) add_row_bias(out, count, &weights.down_bias[e * static_cast<size_t>(dim)], dim);
}

// Every active expert once; inactive experts are not touched, so their weights are not read. With many
// active experts (batched decode: a few tokens each), the threads take whole experts in turn, each
// multiplying on a one-thread pool, instead of splitting every small matmul across all threads; the
// results are the same bit for bit (matmul's sums do not depend on how rows are split over threads).
void MoeFeedForward::run_experts(const MoeLayerWeights& weights, ThreadPool& pool) {
    const auto rows = static_cast<int64_t>(row_token_.size());
    gate_.resize(static_cast<size_t>(rows * config_.expert_ffn_dim));
    up_.resize(gate_.size());
    expert_out_.resize(static_cast<size_t>(rows * weights.router.cols));
    active_experts_.clear();
    for (size_t e = 0; e + 1 < expert_begin_.size(); ++e) {
        if (expert_begin_[e + 1] == expert_begin_[e]) continue;
        active_experts_.push_back(e);
        expert_bytes_ += matrix_bytes(weights.gate[e]) + matrix_bytes(weights.up[e]) + matrix_bytes(weights.down[e]);
    }
    const auto active = static_cast<int64_t>(active_experts_.size());
    if (pool.size() == 1 || active < kExpertParallelFactor * pool.size() || force_row_parallel_) {
        for (size_t e : active_experts_) run_expert(weights, e, pool);
        return;
    }
    whole_experts_.run(pool, active, [&](int64_t i, int, ThreadPool& own) {
        run_expert(weights, active_experts_[static_cast<size_t>(i)], own);
    });
}

// out = the shared experts' SwiGLU FFN over every token, or zeros when the layer has none.
void MoeFeedForward::run_shared(const MoeLayerWeights& weights, const float* normed, int64_t tokens, float* out,
                                ThreadPool& pool) {
    const int64_t dim = weights.router.cols;
    if (!weights.has_shared_experts()) {
        std::fill_n(out, tokens * dim, 0.0f);
        return;
    }
    const int64_t width = weights.shared_gate.rows;
    shared_gate_.resize(static_cast<size_t>(tokens * width));
    shared_up_.resize(shared_gate_.size());
    const WeightMatrix* projections[] = {&weights.shared_gate, &weights.shared_up};
    float* const outputs[] = {shared_gate_.data(), shared_up_.data()};
    matmul_many(projections, normed, tokens, outputs, pool);
    activation_.apply(shared_gate_.data(), shared_up_.data(), tokens * width);
    matmul(weights.shared_down, shared_gate_.data(), tokens, out, pool);
}

// out[t] += weight_j * expert_out[row of (t, j)], choices in their routing order: the same sum whatever
// else is in the batch.
void MoeFeedForward::scatter(int64_t tokens, int64_t dim, float* out, ThreadPool& pool) const {
    const int64_t per_token = config_.experts_per_token;
    pool.parallel_for_dynamic(tokens, kRowsPerCopyTask, [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
            float* row_out = out + t * dim;
            for (int64_t j = 0; j < per_token; ++j) {
                const auto choice = static_cast<size_t>(t * per_token + j);
                const float weight = choices_[choice].weight;
                const float* expert = &expert_out_[static_cast<size_t>(choice_row_[choice] * dim)];
                for (int64_t i = 0; i < dim; ++i) row_out[i] += weight * expert[i];
            }
        }
    });
}

}  // namespace tempered
