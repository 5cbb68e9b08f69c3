// The mixture-of-experts feed-forward block of a DeepSeek-style, Qwen3-MoE or gpt-oss layer: a router picks
// experts_per_token of expert_count routed experts per token (moe_routing.h), each a gated FFN of width
// expert_ffn_dim (the family's activation: SwiGLU, or gpt-oss's clamped one, with per-expert biases where the
// file has them), and shared experts run on every token beside them.
// out = shared(x) + sum_j weight_j * expert_j(x).
//
// The expert matmuls are batched by expert across the tokens of a step: the tokens routed to expert e
// are gathered and multiplied by e's matrices in one matmul (gate and up in one matmul_many), so a step
// reads each active expert's weights once however many of its tokens chose it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/thread_pool.h"
#include "core/whole_items_per_thread.h"
#include "formats/gguf.h"
#include "kernels/cpu/matmul.h"
#include "models/gate_activation.h"
#include "models/moe_config.h"
#include "models/moe_routing.h"

namespace tempered {

struct MoeLayerWeights {
    WeightMatrix router;                 // (expert_count, embedding_dim), float32: ffn_gate_inp.weight
    std::vector<float> correction_bias;  // (expert_count): exp_probs_b.bias; empty if the file has none
    std::vector<float> router_bias;      // (expert_count): ffn_gate_inp.bias, added to the logits (gpt-oss); or empty
    // Per-expert biases after each projection (gpt-oss), (expert_count, width) each; empty if the file has none.
    std::vector<float> gate_bias;    // ffn_gate_exps.bias: (expert_count, expert_ffn_dim)
    std::vector<float> up_bias;      // ffn_up_exps.bias: (expert_count, expert_ffn_dim)
    std::vector<float> down_bias;    // ffn_down_exps.bias: (expert_count, embedding_dim)
    std::vector<WeightMatrix> gate;  // (expert_count) of (expert_ffn_dim, embedding_dim): ffn_gate_exps
    std::vector<WeightMatrix> up;    // (expert_count) of (expert_ffn_dim, embedding_dim): ffn_up_exps
    std::vector<WeightMatrix> down;  // (expert_count) of (embedding_dim, expert_ffn_dim): ffn_down_exps
    WeightMatrix shared_gate;        // (shared_count * expert_ffn_dim, embedding_dim); rows 0 if none
    WeightMatrix shared_up;          // (shared_count * expert_ffn_dim, embedding_dim)
    WeightMatrix shared_down;        // (embedding_dim, shared_count * expert_ffn_dim)
    std::shared_ptr<const std::vector<float>> router_storage;  // the router's float32 copy when the file's is not

    bool has_shared_experts() const { return shared_gate.rows > 0; }
    // Every matrix the forward pass multiplies by except the router (kept float32 so that the choice of
    // experts does not depend on how the weights are stored), for the decoder's pack / dequantize passes.
    std::vector<WeightMatrix*> matrices();
};

// The MoE tensors of one layer ("blk.N."): the router (and its bias), the optional correction bias, the routed experts'
// 3-D tensors (ggml dims {cols, rows, expert_count}) viewed as one matrix per expert inside the mapping,
// their biases where the file has them (all three or none), and the shared experts (ffn_*_shexp) when
// config.shared_expert_count > 0. An Error names a missing
// tensor, a shape that does not match `config`, or a type the kernels cannot read.
Result<MoeLayerWeights> load_moe_layer(const GgufFile& file, const std::string& prefix, int64_t embedding_dim,
                                       const MoeConfig& config);

// Bytes a matmul reads from `matrix` (its file layout or its packed one).
int64_t matrix_bytes(const WeightMatrix& matrix);

// Bytes of one routed expert's gate, up and down matrices (every expert of a layer has the same).
int64_t one_expert_bytes(const MoeLayerWeights& weights);

// How many different experts `choices` name, counted from the choices alone (not from the grouping the
// forward pass made), so that tests and the traffic report can hold the forward's byte count to it.
int64_t distinct_experts(const std::vector<ExpertChoice>& choices, int64_t expert_count);

class MoeFeedForward {
public:
    explicit MoeFeedForward(MoeConfig config, GateFunction activation = {})
        : config_(config), activation_(activation) {}

    // normed (tokens, embedding_dim): the FFN input; out (tokens, embedding_dim), overwritten.
    void forward(const MoeLayerWeights& weights, const float* normed, int64_t tokens, float* out, ThreadPool& pool);

    // Bytes of routed-expert matrices (gate, up, down) the last forward read: each active expert once.
    int64_t expert_weight_bytes_last_forward() const { return expert_bytes_; }
    // The last forward's routing, (tokens, experts_per_token): for tests and diagnostics.
    const std::vector<ExpertChoice>& last_choices() const { return choices_; }
    // The last forward's selection margin per token (tokens; route_experts): how close its choice was to a tie.
    const std::vector<float>& last_margins() const { return margins_; }
    // Always split each expert's matmuls over the threads, never run whole experts per thread: for tests,
    // which hold the two schedules to the same output.
    void set_force_row_parallel(bool force) { force_row_parallel_ = force; }

private:
    void route(const MoeLayerWeights& weights, const float* normed, int64_t tokens, ThreadPool& pool);
    void group_by_expert(int64_t tokens);
    void gather(const float* normed, int64_t dim, ThreadPool& pool);
    void run_experts(const MoeLayerWeights& weights, ThreadPool& pool);
    void run_expert(const MoeLayerWeights& weights, size_t expert, ThreadPool& pool);
    void run_shared(const MoeLayerWeights& weights, const float* normed, int64_t tokens, float* out, ThreadPool& pool);
    void scatter(int64_t tokens, int64_t dim, float* out, ThreadPool& pool) const;

    // Whole experts per thread once at least this many per thread are active.
    static constexpr int64_t kExpertParallelFactor = 2;
    // Rows gathered (or tokens scattered) per task: a decode step's few rows are copied on the caller,
    // cheaper than waking the threads for them.
    static constexpr int64_t kRowsPerCopyTask = 8;

    MoeConfig config_;
    GateFunction activation_;
    int64_t expert_bytes_ = 0;
    bool force_row_parallel_ = false;
    WholeItemsPerThread whole_experts_;   // runs whole experts per thread
    std::vector<size_t> active_experts_;  // this call's experts with rows, ascending
    // Scratch of one call, grown on demand. "rows" are (token, choice) pairs ordered by expert, then token.
    std::vector<float> router_logits_;   // (tokens, expert_count)
    std::vector<ExpertChoice> choices_;  // (tokens, experts_per_token)
    std::vector<float> margins_;         // (tokens): each token's selection margin
    std::vector<int64_t> expert_begin_;  // (expert_count + 1): expert e's rows are [begin[e], begin[e+1])
    std::vector<int64_t> row_token_;     // (rows): the token of each row
    std::vector<int64_t> next_row_;      // (expert_count): group_by_expert's next free row per expert
    std::vector<int64_t> choice_row_;    // (tokens, experts_per_token): the row of each choice
    std::vector<float> gathered_;        // (rows, embedding_dim): the rows' inputs
    std::vector<float> gate_;            // (rows, expert_ffn_dim), then silu(gate) * up
    std::vector<float> up_;              // (rows, expert_ffn_dim)
    std::vector<float> expert_out_;      // (rows, embedding_dim): each row's expert output, unweighted
    std::vector<float> shared_gate_;     // (tokens, shared_count * expert_ffn_dim)
    std::vector<float> shared_up_;       // (tokens, shared_count * expert_ffn_dim)
};

}  // namespace tempered
