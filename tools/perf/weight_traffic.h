// The bytes of weights one decode step of one sequence reads from memory, from a GGUF file's tensor
// table: the ceiling that memory bandwidth puts on batch-1 decode speed (tokens/s <= GB/s / GB per token).
//
// Every tensor is read once per token except the token-embedding table, of which a step reads one row,
// unless the model has no output.weight: then the table is also the output projection (tied
// embeddings, as in SmolLM2) and all of it is read. Norm vectors are counted (they are small). The KV
// cache is not: its read grows with the context (2 x layers x kv_dim x element bytes per position) and
// is small next to the weights for short contexts.
//
// A mixture-of-experts model ({arch}.expert_count routed experts, {arch}.expert_used_count per token)
// stores its routed experts as 3-D tensors (blk.N.ffn_{gate,up,down}_exps.weight, or a fused
// ffn_gate_up_exps): a token reads only the experts it is routed to, so those tensors count
// expert_used_count / expert_count of their bytes. Shared experts, routers, dense layers and attention
// count whole.
#pragma once

#include <cstdint>

#include "formats/gguf.h"

namespace tempered {

struct WeightTraffic {
    uint64_t bytes_per_token = 0;        // what one batch-1 decode step reads
    uint64_t tensor_bytes = 0;           // every tensor in the file
    uint64_t embedding_table_bytes = 0;  // token_embd.weight; 0 when absent
    bool tied_embeddings = false;        // no output.weight: the embedding table is the output matrix
    uint64_t routed_expert_bytes = 0;    // every routed expert's tensors (*_exps.weight); 0 for a dense model
    int64_t expert_count = 0;            // {arch}.expert_count; 0 for a dense model
    int64_t experts_per_token = 0;       // {arch}.expert_used_count
};

WeightTraffic weight_traffic(const GgufFile& file);

}  // namespace tempered
