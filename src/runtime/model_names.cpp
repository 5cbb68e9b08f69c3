#include "runtime/model_names.h"

#include <cstdlib>
#include <filesystem>
#include <string_view>

namespace tempered {
namespace {

struct KnownModel {
    std::string_view name;
    std::string_view file_name;
};

// Kept in step with MODELS in scripts/pull_model.py, which downloads them.
constexpr KnownModel kKnownModels[] = {
    {"smollm2-135m-instruct", "SmolLM2-135M-Instruct.Q4_1.gguf"},
    {"gemma3-270m", "gemma-3-270m-Q4_K_M.gguf"},
    {"qwen2.5-coder-0.5b-instruct", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"},
};

}  // namespace

std::string model_cache_dir() {
    if (const char* home = std::getenv("TEMPERED_HOME"); home && *home) return std::string(home) + "/models";
    const char* user_home = std::getenv("HOME");
    return std::string(user_home ? user_home : ".") + "/.cache/tempered/models";
}

Result<std::string> resolve_model_path(const std::string& name_or_path) {
    std::error_code ignored;
    for (const auto& known : kKnownModels) {
        if (known.name != name_or_path) continue;
        const std::string path = model_cache_dir() + "/" + std::string(known.file_name);
        if (std::filesystem::is_regular_file(path, ignored)) return path;
        return Error{"model '" + name_or_path + "' is not downloaded (expected " + path +
                     "); fetch it with: scripts/pull_model.py " + name_or_path};
    }
    if (std::filesystem::is_regular_file(name_or_path, ignored)) return name_or_path;
    if (std::filesystem::is_directory(name_or_path, ignored)) {
        if (std::filesystem::is_regular_file(std::filesystem::path(name_or_path) / "config.json", ignored))
            return name_or_path;  // a Hugging Face model directory
        return Error{"'" + name_or_path + "' is a directory without config.json (not a Hugging Face model directory)"};
    }
    std::string known_names;
    for (const auto& known : kKnownModels) known_names += (known_names.empty() ? "" : ", ") + std::string(known.name);
    return Error{"no model file or directory at '" + name_or_path + "' and it is not a known model name (" +
                 known_names + ")"};
}

}  // namespace tempered
