// A Hugging Face directory's tensors as the GGUF tensors the loaders read: renamed ("model.layers.3.self_attn.
// q_proj.weight" -> "blk.3.attn_q.weight"), shapes written GGUF's way (innermost first), and converted as
// llama.cpp's converter would (Q/K rows reordered for Llama, Gemma's norms stored as 1 + w); matrices in
// the type asked for (--quantize), vectors as F32.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/dtype.h"
#include "core/result.h"
#include "formats/gguf.h"
#include "formats/safetensors_directory.h"
#include "hf/hf_config.h"

namespace tempered {

// F32, F16, BF16 (kept as floats) or Q8_0 (quantized at load: llama.cpp's reference rounding).
bool hf_matrix_type_supported(DType type);

// The GGUF name of `hf_name`; "" for a tensor tempered does not read (another tower, rotary caches);
// an Error for one it does not know.
Result<std::string> gguf_tensor_name(const HfModelDescription& model, std::string_view hf_name);

// A routed expert's matrix ("model.layers.3.mlp.experts.17.up_proj.weight"): the GGUF stack it belongs to
// ("blk.3.ffn_up_exps.weight") and its index there; nullopt for every other tensor.
struct ExpertSlice {
    std::string stack_name;
    int64_t expert = 0;
};
std::optional<ExpertSlice> expert_slice(std::string_view hf_name, int64_t layer_count);

// The directory's weights and `model`'s metadata as one in-memory GGUF view named `path`.
Result<GgufFile> assemble_hf_model(const HfModelDescription& model, const SafetensorsDirectory& weights,
                                   const std::string& path, DType matrix_type, GgufMetadata extra_metadata);

}  // namespace tempered
