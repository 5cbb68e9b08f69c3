// A Hugging Face model directory opened as the GGUF view every loader reads (formats/gguf.h's assemble):
// config.json (hf_config.h), the safetensors weights converted at load (hf_tensors.h), and the chat
// template from tokenizer_config.json or chat_template.jinja. The safetensors mappings are closed once
// the weights are converted, so the process keeps one copy: the converted one.
#pragma once

#include <string>

#include "core/dtype.h"
#include "core/result.h"
#include "formats/gguf.h"

namespace tempered {

// Whether `path` is a directory holding a config.json (what --model DIR means).
bool is_hf_directory(const std::string& path);

// What to read: everything, or (upstream mode, tokenizer checks) the config and tokenizer without weights.
enum class HfParts { Everything, Tokenizer };

Result<GgufFile> open_hf_directory(const std::string& directory, DType matrix_type,
                                   HfParts parts = HfParts::Everything);

}  // namespace tempered
