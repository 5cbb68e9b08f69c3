#include <array>
#include <string>

#include "models/decoder.h"
#include "models/decoder_spec.h"
#include "models/model.h"

namespace tempered {

// Llama GGUFs store Q and K rows permuted for adjacent-pair rope; everything else is the plain block.
DecoderSpec llama_spec() {
    DecoderSpec spec;
    spec.rope_style = RopeStyle::AdjacentPairs;
    return spec;
}

// Qwen2 / Qwen2.5: Llama's block plus biases on the Q, K and V projections, and half-split (NEOX) rope
// whose base ({arch}.rope.freq_base, 1e6 for Qwen2.5) comes from the file like every other family's.
DecoderSpec qwen2_spec() {
    DecoderSpec spec;
    spec.rope_style = RopeStyle::Halves;
    spec.qkv_bias = true;
    return spec;
}

std::span<const ArchitectureEntry> supported_architectures() {
    static constexpr std::array entries = {
        ArchitectureEntry{"llama", llama_spec},
        ArchitectureEntry{"qwen2", qwen2_spec},
    };
    return entries;
}

Result<std::unique_ptr<Model>> load_model(const GgufFile& file, ThreadPool& pool, const ModelOptions& options) {
    const auto architecture = file.get_string("general.architecture");
    if (!architecture) return Error{"model: the file has no general.architecture"};
    std::string known;
    for (const auto& entry : supported_architectures()) {
        if (entry.architecture == *architecture) {
            DecoderSpec spec = entry.spec();
            auto config = read_model_config(file, spec.rope_style);
            if (!config) return config.error();
            return load_decoder(file, std::move(config.value()), std::move(spec), options, pool);
        }
        known += (known.empty() ? "" : ", ") + std::string(entry.architecture);
    }
    return Error{"model: architecture '" + *architecture + "' is not supported (supported: " + known + ")"};
}

}  // namespace tempered
