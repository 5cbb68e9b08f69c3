#include <array>
#include <string>

#include "models/llama.h"
#include "models/model.h"

namespace tempered {

std::span<const ArchitectureEntry> supported_architectures() {
    static constexpr std::array entries = {
        ArchitectureEntry{"llama", RopeStyle::AdjacentPairs, load_llama},
    };
    return entries;
}

Result<std::unique_ptr<Model>> load_model(const GgufFile& file, ThreadPool& pool, const ModelOptions& options) {
    const auto architecture = file.get_string("general.architecture");
    if (!architecture) return Error{"model: the file has no general.architecture"};
    std::string known;
    for (const auto& entry : supported_architectures()) {
        if (entry.architecture == *architecture) {
            auto config = read_model_config(file, entry.rope_style);
            if (!config) return config.error();
            return entry.load(file, std::move(config.value()), options, pool);
        }
        known += (known.empty() ? "" : ", ") + std::string(entry.architecture);
    }
    return Error{"model: architecture '" + *architecture + "' is not supported (supported: " + known + ")"};
}

}  // namespace tempered
