#include "perf/weight_traffic.h"

#include <string_view>

namespace tempered {
namespace {

bool is_routed_expert_tensor(std::string_view name) {
    return name.ends_with("_exps.weight");  // ffn_gate_exps, ffn_up_exps, ffn_down_exps, ffn_gate_up_exps
}

// Sets expert_count and experts_per_token from "{arch}.expert_count" / "{arch}.expert_used_count" when
// both are present and consistent; a dense model (or a file that says nothing usable) keeps 0.
void read_expert_counts(const GgufFile& file, WeightTraffic& traffic) {
    const auto architecture = file.get_string("general.architecture");
    if (!architecture) return;
    const auto count = file.get_int(*architecture + ".expert_count");
    const auto used = file.get_int(*architecture + ".expert_used_count");
    if (!count || !used || *count < 1 || *used < 1 || *used > *count) return;
    traffic.expert_count = *count;
    traffic.experts_per_token = *used;
}

}  // namespace

WeightTraffic weight_traffic(const GgufFile& file) {
    WeightTraffic traffic;
    traffic.tied_embeddings = file.tensor("output.weight") == nullptr;
    read_expert_counts(file, traffic);
    for (const GgufTensorInfo& tensor : file.tensors()) {
        traffic.tensor_bytes += tensor.size_bytes;
        if (traffic.expert_count > 0 && is_routed_expert_tensor(tensor.name)) {
            traffic.routed_expert_bytes += tensor.size_bytes;
            // Experts are equal-sized slices: the active ones' share of the tensor.
            traffic.bytes_per_token += tensor.size_bytes / static_cast<uint64_t>(traffic.expert_count) *
                                       static_cast<uint64_t>(traffic.experts_per_token);
            continue;
        }
        if (tensor.name != "token_embd.weight") {
            traffic.bytes_per_token += tensor.size_bytes;
            continue;
        }
        traffic.embedding_table_bytes = tensor.size_bytes;
        const uint64_t rows = tensor.row_count();
        traffic.bytes_per_token +=
            traffic.tied_embeddings || rows == 0 ? tensor.size_bytes : tensor.size_bytes / rows;  // one row
    }
    return traffic;
}

}  // namespace tempered
