// Finding real model files and oracle fixtures for tests. Models live in $TEMPERED_MODEL_DIR (default
// ~/.cache/tempered/models; fetch with scripts/pull_model.py). A missing model skips the test, unless
// TEMPERED_REQUIRE_MODELS=1 (CI), where it fails.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/half.h"

namespace tempered::testing {

inline std::filesystem::path model_dir() {
    if (const char* dir = std::getenv("TEMPERED_MODEL_DIR"); dir && *dir) return dir;
    const char* home = std::getenv("HOME");
    return std::filesystem::path(home ? home : "/root") / ".cache" / "tempered" / "models";
}

inline bool models_required() {
    const char* required = std::getenv("TEMPERED_REQUIRE_MODELS");
    return required && std::string(required) == "1";
}

inline std::filesystem::path fixture_dir(const std::string& name) {
    return std::filesystem::path(TEMPERED_SOURCE_DIR) / "tests" / "fixtures" / name;
}

inline std::string read_text_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline std::vector<float> read_f32_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    const auto bytes = static_cast<size_t>(in.tellg());
    std::vector<float> values(bytes / sizeof(float));
    in.seekg(0);
    in.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(values.size() * sizeof(float)));
    return values;
}

// float16 little-endian values, widened.
inline std::vector<float> read_f16_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    const auto bytes = static_cast<size_t>(in.tellg());
    std::vector<uint16_t> halves(bytes / sizeof(uint16_t));
    in.seekg(0);
    in.read(reinterpret_cast<char*>(halves.data()), static_cast<std::streamsize>(halves.size() * sizeof(uint16_t)));
    std::vector<float> values(halves.size());
    for (size_t i = 0; i < halves.size(); ++i) values[i] = half_to_float(halves[i]);
    return values;
}

}  // namespace tempered::testing

// Sets `path_variable` to the model file `file_name`, or skips (fails when models are required).
#define TEMPERED_MODEL_OR_SKIP(path_variable, file_name)                                             \
    const std::filesystem::path path_variable = ::tempered::testing::model_dir() / (file_name);      \
    do {                                                                                             \
        if (!std::filesystem::exists(path_variable)) {                                               \
            if (::tempered::testing::models_required()) FAIL() << "missing model " << path_variable; \
            GTEST_SKIP() << "model " << path_variable << " not found (scripts/pull_model.py)";       \
        }                                                                                            \
    } while (0)
