// The architecture-neutral face of a loaded model, and the registry that picks a family by
// general.architecture. Each family is a row of model_registry.cpp (a DecoderSpec), run by the one
// decoder of decoder.cpp; the engine only ever sees Model.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/thread_pool.h"
#include "formats/gguf.h"
#include "kv/kv_cache.h"
#include "models/batch.h"
#include "models/model_config.h"

namespace tempered {

// Routed-expert weight traffic of one forward, summed over its mixture-of-experts layers; all zero for a
// model without experts. The bound is what reading each active expert exactly once costs.
struct ExpertTraffic {
    int64_t weight_bytes = 0;     // expert matrices (gate, up, down) the forward read
    int64_t read_once_bytes = 0;  // per layer: distinct experts its tokens chose x one expert's bytes
    int64_t active_experts = 0;   // distinct experts chosen, summed over the layers
};

class Model {
public:
    virtual ~Model() = default;
    virtual const ModelConfig& config() const = 0;

    // Runs every token of `batch` through the model, writes their keys and values into `cache`, and
    // writes logits (batch.output_count(), vocab_size) for the tokens that want them, in batch order.
    // Every token's sequence must already have cache blocks up to its position (e.g. KvBlockPool::ensure_capacity).
    // An Error, with nothing computed, for an invalid batch (token id, position, missing blocks).
    virtual Status forward(const Batch& batch, KvCache& cache, float* logits) = 0;

    // Mixture-of-experts files: per token of the last forward, its smallest expert-selection margin over
    // the MoE layers (moe_routing.h); empty for other models. For oracle tests and diagnostics: a choice
    // that activation noise can flip shows up here.
    virtual std::span<const float> last_router_margins() const { return {}; }
    // The last forward's routed-expert traffic (zeros for dense models).
    virtual ExpertTraffic last_expert_traffic() const { return {}; }

    // The tensor data of its file the model still reads after loading (matrices it did not repack or
    // convert, the embedding table); nullopt when it cannot say. A file assembled in memory (a Hugging Face
    // directory) frees the rest: GgufFile::release_storage_except.
    virtual std::optional<std::vector<const void*>> file_data_in_use() const { return std::nullopt; }
};

struct ModelOptions {
    // Convert every weight matrix to float32 at load, so that matmuls multiply float activations
    // instead of 8-bit quantized ones. About 4x the memory and much slower; for oracle tests against
    // a float32 reference and for telling quantization effects from bugs.
    bool dequantize_weights = false;
};

// Loads the model in `file`, which must outlive it (weights stay in the file's mapping).
// `pool` runs the forward pass and must outlive the model too.
Result<std::unique_ptr<Model>> load_model(const GgufFile& file, ThreadPool& pool, const ModelOptions& options = {});

struct DecoderSpec;

// A row of the architecture table: the family constants of general.architecture, which the one decoder
// (decoder.h) completes from the file and runs.
struct ArchitectureEntry {
    std::string_view architecture;  // general.architecture
    DecoderSpec (*spec)();          // its constants; rope style as llama.cpp's llama_model_rope_type()
};

// Every architecture this build can run.
std::span<const ArchitectureEntry> supported_architectures();

}  // namespace tempered
