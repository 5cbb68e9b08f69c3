// `tempered inspect PATH`: a GGUF file's header, metadata and tensor table, as the reader sees it.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "formats/gguf.h"

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

}  // namespace

void add_inspect_command(CLI::App& app, int& exit_code) {
    auto* command = app.add_subcommand("inspect", "Print a GGUF file's metadata and tensor table");
    auto path = std::make_shared<std::string>();
    command->add_option("path", *path, "GGUF file")->required();
    command->callback([&exit_code, path] {
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
