// The model's own sampling defaults: Hugging Face's generation_config.json (beside the model file or
// named by --generation-config) and the GGUF keys general.sampling.*. The JSON file wins where both
// set a value, since it is what the model's authors ship and edit.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"
#include "sampling/sampling_values.h"

namespace tempered {

class GgufFile;

struct ModelSamplingDefaults {
    SamplingValues values;
    std::vector<std::string> origins;   // where they came from, for the start-up log
    std::vector<std::string> warnings;  // values present but unusable (out of range), skipped
};

// Reads generation_config.json content. `do_sample: false` means greedy (temperature 0) whatever
// temperature the file also states. The keys are sampling_params.h's `generation_config_key`s; others are
// ignored.
Result<ModelSamplingDefaults> parse_generation_config(const std::string& json_text, const std::string& origin);

// Reads the GGUF keys of sampling_params.h (general.sampling.temp, top_k, ...) from a GGUF file.
ModelSamplingDefaults gguf_sampling_defaults(const GgufFile& file);

// The model's defaults: `explicit_path` if given (an error if unreadable), else generation_config.json
// in the model file's folder if present, layered over the GGUF keys.
Result<ModelSamplingDefaults> load_model_sampling_defaults(const GgufFile& file, const std::string& explicit_path);

}  // namespace tempered
