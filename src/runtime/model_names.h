// --model takes a path to a .gguf file or a known short name, found in the model cache that
// scripts/pull_model.py fills ($TEMPERED_HOME/models, default ~/.cache/tempered/models).
#pragma once

#include <string>

#include "core/result.h"

namespace tempered {

inline constexpr const char* kDefaultModelName = "smollm2-135m-instruct";

std::string model_cache_dir();
// The file `name_or_path` stands for; an Error saying how to pull it when a known model is missing.
Result<std::string> resolve_model_path(const std::string& name_or_path);

}  // namespace tempered
