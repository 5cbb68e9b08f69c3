// A Hugging Face `tokenizer.json` (with `tokenizer_config.json`) read as the tokenizer.ggml.* metadata the
// tokenizer already reads: the vocabulary and its added tokens, the merges, and the pre-tokenizer recognised
// by its structure (a regex tempered implements by hand, matched exactly; anything else refused by name).
// Byte-level BPE today (Llama 3, Qwen, SmolLM and GPT-2 forms).
#pragma once

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "hf/hf_config.h"

namespace tempered {

// `tokenizer_config` may be null (absent file).
Result<GgufMetadata> hf_tokenizer_metadata(const nlohmann::json& tokenizer, const nlohmann::json& tokenizer_config);

}  // namespace tempered
