// A Hugging Face `config.json` read as the GGUF metadata the model loaders already read ("{arch}.block_count",
// ...), with what the tensors need on the way (hf_tensors.h): so a directory becomes the same ModelConfig
// and DecoderSpec row as the GGUF of the same model, not a second loader.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "formats/gguf.h"

namespace tempered {

using GgufMetadata = std::vector<std::pair<std::string, GgufValue>>;

struct HfModelDescription {
    std::string hf_architecture;  // config.json's architectures[0], e.g. "LlamaForCausalLM"
    std::string architecture;     // GGUF's name for it, e.g. "llama"
    GgufMetadata metadata;        // general.architecture and the {arch}.* hyperparameters
    // Where the language model's tensors live: "model.", or in a Gemma 3 conditional-generation directory
    // (whose vision tower tempered does not read) "language_model.model." or, as transformers 5 writes it,
    // "model.language_model."; and its head.
    std::vector<std::string> tensor_prefixes = {"model."};
    std::string head_name = "lm_head.weight";   // "" when the head is tied to the embeddings
    std::vector<std::string> ignored_prefixes;  // tensors of other towers, skipped
    // Llama GGUFs hold Q and K rows reordered for adjacent-pair rope (llama.cpp's converter permutes them);
    // HF files hold them in half-split order, so they are reordered at load to match the decoder's llama row.
    bool permute_query_key = false;
    // Gemma's RMSNorm multiplies by (1 + w) and HF stores w; GGUF stores 1 + w (the converter adds 1).
    bool norms_plus_one = false;
    // DeepSeek's block-scaled FP8 (quantization_config quant_method "fp8"): each F8_E4M3 matrix NAME has a
    // NAME_scale_inv of one scale per block of fp8_block_rows x fp8_block_cols; w = e4m3(q) * scale. 0: none.
    int64_t fp8_block_rows = 0;
    int64_t fp8_block_cols = 0;
    int64_t head_count = 0;
    int64_t kv_head_count = 0;
    int64_t layer_count = 0;
    int64_t prediction_layers = 0;  // DeepSeek-V3's num_nextn_predict_layers after them: skipped (speculation later)
};

// config.json's text -> the description; an Error names the field that is missing, malformed or not supported
// (an architecture tempered does not run is refused by its `architectures` name).
Result<HfModelDescription> describe_hf_model(const nlohmann::json& config);

// The HF architecture names describe_hf_model accepts.
std::vector<std::string> supported_hf_architectures();

}  // namespace tempered
