#include "perf/weight_traffic.h"

namespace tempered {

WeightTraffic weight_traffic(const GgufFile& file) {
    WeightTraffic traffic;
    traffic.tied_embeddings = file.tensor("output.weight") == nullptr;
    for (const GgufTensorInfo& tensor : file.tensors()) {
        traffic.tensor_bytes += tensor.size_bytes;
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
