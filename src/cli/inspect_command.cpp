// `tempered inspect PATH`: a GGUF file's header, metadata and tensor table, as the reader sees it; for a
// Hugging Face directory the metadata it is read as and its safetensors tensors with the GGUF names they
// become (nothing converted).
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "formats/gguf.h"
#include "formats/safetensors_directory.h"
#include "hf/hf_config.h"
#include "hf/hf_model.h"
#include "hf/hf_tensors.h"

namespace tempered {
namespace {

std::string value_type_text(const GgufValue& value) {
    std::string text(gguf_value_type_name(value.type));
    if (value.type == GgufValueType::ARRAY)
        text += "<" + std::string(gguf_value_type_name(value.element_type)) + ">[" +
                std::to_string(value.elements.size()) + "]";
    return text;
}

std::string dims_text(const std::vector<uint64_t>& dims) {
    std::string text = "[";
    for (size_t i = 0; i < dims.size(); ++i) text += (i ? ", " : "") + std::to_string(dims[i]);
    return text + "]";
}

void print_file(const GgufFile& file) {
    std::printf("file: %s\n", file.path().c_str());
    std::printf("version: %u\n", file.version());
    std::printf("alignment: %llu\n", static_cast<unsigned long long>(file.alignment()));
    std::printf("data offset: %llu\n", static_cast<unsigned long long>(file.data_offset()));
    std::printf("\nmetadata (%zu keys):\n", file.metadata().size());
    for (const auto& [key, value] : file.metadata())
        std::printf("  %s (%s) = %s\n", key.c_str(), value_type_text(value).c_str(), value.to_display_string().c_str());

    uint64_t total_bytes = 0;
    std::printf("\ntensors (%zu):\n", file.tensors().size());
    std::printf("  %-40s %-6s %-24s %14s %14s\n", "name", "type", "dims", "offset", "bytes");
    for (const auto& tensor : file.tensors()) {
        std::printf("  %-40s %-6s %-24s %14llu %14llu\n", tensor.name.c_str(),
                    std::string(dtype_name(tensor.type)).c_str(), dims_text(tensor.dims).c_str(),
                    static_cast<unsigned long long>(tensor.offset), static_cast<unsigned long long>(tensor.size_bytes));
        total_bytes += tensor.size_bytes;
    }
    std::printf("total tensor bytes: %llu\n", static_cast<unsigned long long>(total_bytes));
}

std::string shape_text(const std::vector<uint64_t>& shape) { return dims_text(shape); }

// A Hugging Face directory: the metadata (config.json, tokenizer, template) and each shard's tensors.
int print_directory(const std::string& path) {
    auto view = open_hf_directory(path, DType::F32, HfParts::Tokenizer);
    if (!view) {
        std::fprintf(stderr, "tempered inspect: %s\n", view.error().message.c_str());
        return 1;
    }
    std::printf("directory: %s (Hugging Face; read as the metadata below)\n", path.c_str());
    std::printf("\nmetadata (%zu keys):\n", view->metadata().size());
    for (const auto& [key, value] : view->metadata())
        std::printf("  %s (%s) = %s\n", key.c_str(), value_type_text(value).c_str(), value.to_display_string().c_str());
    auto weights = SafetensorsDirectory::open(path);
    if (!weights) {
        std::fprintf(stderr, "tempered inspect: %s\n", weights.error().message.c_str());
        return 1;
    }
    std::ifstream config_file(path + "/config.json");
    const auto model = describe_hf_model(nlohmann::json::parse(config_file, nullptr, false));
    uint64_t total_bytes = 0;
    std::printf("\ntensors (%zu in %zu shards):\n", weights->tensors().size(), weights->shards().size());
    std::printf("  %-52s %-8s %-18s %-32s\n", "name", "dtype", "shape", "read as");
    for (const SafetensorsTensor* tensor : weights->tensors()) {
        std::string read_as = "?";
        if (model) {
            auto name = gguf_tensor_name(*model, tensor->name);
            read_as = !name ? "(not read: unknown)" : name->empty() ? "(not read)" : *name;
        }
        std::printf("  %-52s %-8s %-18s %-32s\n", tensor->name.c_str(),
                    std::string(safetensors_dtype_name(tensor->dtype)).c_str(), shape_text(tensor->shape).c_str(),
                    read_as.c_str());
        total_bytes += tensor->data.size();
    }
    std::printf("total tensor bytes: %llu\n", static_cast<unsigned long long>(total_bytes));
    return 0;
}

}  // namespace

void add_inspect_command(CLI::App& app, int& exit_code) {
    auto* command =
        app.add_subcommand("inspect", "Print a GGUF file's (or a Hugging Face directory's) metadata and tensors");
    auto path = std::make_shared<std::string>();
    command->add_option("path", *path, "GGUF file or Hugging Face model directory")->required();
    command->callback([&exit_code, path] {
        if (is_hf_directory(*path)) {
            exit_code = print_directory(*path);
            return;
        }
        auto file = GgufFile::open(*path);
        if (!file) {
            std::fprintf(stderr, "tempered inspect: %s\n", file.error().message.c_str());
            exit_code = 1;
            return;
        }
        print_file(*file);
        exit_code = 0;
    });
}

}  // namespace tempered
