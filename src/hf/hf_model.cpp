#include "hf/hf_model.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "formats/safetensors_directory.h"
#include "hf/gguf_values.h"
#include "hf/hf_config.h"
#include "hf/hf_tensors.h"
#include "hf/hf_tokenizer.h"

namespace tempered {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr uintmax_t kMaxConfigBytes = 16u << 20;
constexpr uintmax_t kMaxTokenizerBytes = 256u << 20;  // a 262k-token vocabulary's tokenizer.json is ~35 MB

Result<std::string> read_text_limited(const fs::path& path, uintmax_t limit) {
    std::error_code error;
    const uintmax_t bytes = fs::file_size(path, error);
    if (error) return Error{path.string() + ": cannot be read"};
    if (bytes > limit) return Error{path.string() + ": over " + std::to_string(limit >> 20) + " MiB"};
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

Result<std::string> read_text(const fs::path& path) { return read_text_limited(path, kMaxConfigBytes); }

// chat_template.jinja, else tokenizer_config.json's "chat_template" (a string, or a list of named templates
// of which "default" is the one), as tokenizer.chat_template.
Status add_chat_template(const fs::path& directory, GgufMetadata& metadata) {
    if (fs::exists(directory / "chat_template.jinja")) {
        auto text = read_text(directory / "chat_template.jinja");
        if (!text) return text.error();
        metadata.emplace_back("tokenizer.chat_template", gguf_string(std::move(text).value()));
        return Ok{};
    }
    if (!fs::exists(directory / "tokenizer_config.json")) return Ok{};
    auto text = read_text(directory / "tokenizer_config.json");
    if (!text) return text.error();
    const json config = json::parse(*text, nullptr, false);
    if (config.is_discarded() || !config.is_object()) return Error{"tokenizer_config.json: not a JSON object"};
    const auto field = config.find("chat_template");
    if (field == config.end() || field->is_null()) return Ok{};
    if (field->is_string()) {
        metadata.emplace_back("tokenizer.chat_template", gguf_string(field->get<std::string>()));
        return Ok{};
    }
    if (field->is_array())
        for (const json& named : *field)
            if (named.is_object() && named.value("name", "") == "default" && named.contains("template") &&
                named.at("template").is_string()) {
                metadata.emplace_back("tokenizer.chat_template", gguf_string(named.at("template").get<std::string>()));
                return Ok{};
            }
    return Error{"tokenizer_config.json: \"chat_template\" is neither a string nor a list with a default"};
}

// tokenizer.json with tokenizer_config.json (optional) as tokenizer.ggml.* metadata.
Status add_tokenizer(const fs::path& directory, GgufMetadata& metadata) {
    auto text = read_text_limited(directory / "tokenizer.json", kMaxTokenizerBytes);
    if (!text) return text.error();
    const json tokenizer = json::parse(*text, nullptr, false);
    if (tokenizer.is_discarded()) return Error{"tokenizer.json: not valid JSON"};
    json config;
    if (fs::exists(directory / "tokenizer_config.json")) {
        auto config_text = read_text(directory / "tokenizer_config.json");
        if (!config_text) return config_text.error();
        config = json::parse(*config_text, nullptr, false);
        if (config.is_discarded()) return Error{"tokenizer_config.json: not valid JSON"};
    }
    auto tokens = hf_tokenizer_metadata(tokenizer, config);
    if (!tokens) return tokens.error();
    for (auto& entry : *tokens) metadata.push_back(std::move(entry));
    return Ok{};
}

}  // namespace

bool is_hf_directory(const std::string& path) {
    std::error_code ignored;
    return fs::is_directory(path, ignored) && fs::is_regular_file(fs::path(path) / "config.json", ignored);
}

Result<GgufFile> open_hf_directory(const std::string& directory, DType matrix_type, HfParts parts) {
    const fs::path root(directory);
    auto config_text = read_text(root / "config.json");
    if (!config_text) return config_text.error();
    const json config = json::parse(*config_text, nullptr, false);
    if (config.is_discarded()) return Error{directory + "/config.json: not valid JSON"};
    auto model = describe_hf_model(config);
    if (!model) return Error{directory + "/" + model.error().message};
    GgufMetadata extra;
    extra.emplace_back("general.name", gguf_string(root.filename().empty() ? root.parent_path().filename().string()
                                                                           : root.filename().string()));
    if (auto added = add_chat_template(root, extra); !added) return Error{directory + "/" + added.error().message};
    if (auto added = add_tokenizer(root, extra); !added) return Error{directory + "/" + added.error().message};
    if (parts == HfParts::Tokenizer) {
        GgufMetadata metadata = model->metadata;
        for (auto& entry : extra) metadata.push_back(std::move(entry));
        return GgufFile::assemble(directory, std::move(metadata), {}, {});
    }
    auto weights = SafetensorsDirectory::open(directory);
    if (!weights) return weights.error();
    return assemble_hf_model(*model, *weights, directory, matrix_type, std::move(extra));
}

}  // namespace tempered
