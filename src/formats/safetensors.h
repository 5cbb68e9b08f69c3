// safetensors reader over a memory mapping (Hugging Face's weight format).
//
// Layout: an 8-byte little-endian header length N | N bytes of JSON: {"NAME": {"dtype": "BF16", "shape":
// [rows, cols], "data_offsets": [begin, end]}, ..., "__metadata__": {"key": "text"}} | the data buffer,
// each tensor at [begin, end) from the buffer's start. As for GGUF nothing read from the file is trusted:
// the header length, every dtype, shape and offset is checked (overflow included) before use, and as
// the reference library requires, the tensors tile the buffer exactly: no gap, no overlap, nothing after.
// A malformed file yields an Error naming the tensor and field; tensor data stays in the mapping.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/mapped_file.h"
#include "core/result.h"

namespace tempered {

enum class SafetensorsDType {
    BOOL,
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    U64,
    I64,
    F16,
    BF16,
    F32,
    F64,
    F8_E4M3,
    F8_E5M2,
};
std::optional<SafetensorsDType> safetensors_dtype(std::string_view name);
std::string_view safetensors_dtype_name(SafetensorsDType dtype);
uint64_t safetensors_dtype_bytes(SafetensorsDType dtype);

struct SafetensorsTensor {
    std::string name;
    SafetensorsDType dtype = SafetensorsDType::F32;
    std::vector<uint64_t> shape;    // outermost first (row-major), as the file and PyTorch write it
    std::span<const uint8_t> data;  // in the mapping (or the parsed bytes)

    uint64_t element_count() const;
};

class SafetensorsFile {
public:
    static Result<SafetensorsFile> open(const std::string& path);
    // Parses bytes the caller keeps alive (tests, the fuzzer). Tensor data points into `bytes`.
    static Result<SafetensorsFile> parse(std::span<const uint8_t> bytes);

    // Tensors in the order of their data in the buffer.
    const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
    const SafetensorsTensor* tensor(std::string_view name) const;
    const std::map<std::string, std::string>& metadata() const { return metadata_; }
    const std::string& path() const { return file_.path(); }

private:
    MappedFile file_;
    std::vector<SafetensorsTensor> tensors_;
    std::unordered_map<std::string, size_t> index_;
    std::map<std::string, std::string> metadata_;
};

}  // namespace tempered
