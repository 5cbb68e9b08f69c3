// GGUF (v2 and v3) reader over a memory mapping.
//
// Every count, length, dimension and offset read from the file is checked against the file size
// (overflow included) before it is used, so a malformed or hostile file yields an Error that names the
// field and its byte offset, never a crash or a huge allocation. Tensor data stays in the mapping.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/dtype.h"
#include "core/mapped_file.h"
#include "core/result.h"

namespace tempered {

enum class GgufValueType : uint32_t {
    UINT8 = 0,
    INT8 = 1,
    UINT16 = 2,
    INT16 = 3,
    UINT32 = 4,
    INT32 = 5,
    FLOAT32 = 6,
    BOOL = 7,
    STRING = 8,
    ARRAY = 9,
    UINT64 = 10,
    INT64 = 11,
    FLOAT64 = 12,
};
std::string_view gguf_value_type_name(GgufValueType type);

// One metadata value. Scalars of every integer width are kept as int64/uint64, floats as double, so
// callers ask for "an integer" without caring how the writer sized it. Arrays hold their elements.
struct GgufValue {
    GgufValueType type = GgufValueType::UINT8;
    uint64_t unsigned_value = 0;                        // UINT8/16/32/64 and BOOL
    int64_t signed_value = 0;                           // INT8/16/32/64
    double float_value = 0.0;                           // FLOAT32/64
    std::string string_value;                           // STRING
    GgufValueType element_type = GgufValueType::UINT8;  // ARRAY
    std::vector<GgufValue> elements;                    // ARRAY

    std::optional<int64_t> as_int() const;   // any integer type, if it fits
    std::optional<double> as_float() const;  // any integer or float type
    std::optional<bool> as_bool() const;
    const std::string* as_string() const;
    std::string to_display_string(size_t max_array_items = 8) const;  // for `tempered inspect`
};

struct GgufTensorInfo {
    std::string name;
    std::vector<uint64_t> dims;  // dims[0] is the innermost (contiguous) dimension, as in ggml's ne[]
    DType type = DType::F32;
    uint64_t offset = 0;  // relative to the start of the data section
    uint64_t size_bytes = 0;
    const uint8_t* data = nullptr;  // points into the mapping

    uint64_t element_count() const;
    uint64_t row_length() const { return dims.empty() ? 1 : dims[0]; }
    uint64_t row_count() const { return row_length() ? element_count() / row_length() : 0; }
};

class GgufFile {
public:
    static Result<GgufFile> open(const std::string& path);
    // Parses bytes the caller keeps alive (tests, the fuzzer). Tensor data pointers point into `bytes`.
    static Result<GgufFile> parse(std::span<const uint8_t> bytes);
    // A GGUF view made in memory, not read from a file: a Hugging Face directory read as GGUF (hf/). Each
    // tensor's data points into `storage`, which the view keeps; `path` names where it came from.
    static GgufFile assemble(std::string path, std::vector<std::pair<std::string, GgufValue>> metadata,
                             std::vector<GgufTensorInfo> tensors, std::vector<AlignedBuffer> storage);

    uint32_t version() const { return version_; }
    uint64_t alignment() const { return alignment_; }
    uint64_t data_offset() const { return data_offset_; }

    // Metadata in file order.
    const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return metadata_; }
    const GgufValue* find(std::string_view key) const;
    std::optional<int64_t> get_int(std::string_view key) const;
    std::optional<double> get_float(std::string_view key) const;
    std::optional<bool> get_bool(std::string_view key) const;
    std::optional<std::string> get_string(std::string_view key) const;
    // Typed array getters: nullopt if absent or if the elements are of another kind.
    std::optional<std::vector<std::string>> get_string_array(std::string_view key) const;
    std::optional<std::vector<double>> get_float_array(std::string_view key) const;
    std::optional<std::vector<int64_t>> get_int_array(std::string_view key) const;

    const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
    const GgufTensorInfo* tensor(std::string_view name) const;

    const std::string& path() const { return path_; }

    // An assembled view only: frees the data of every tensor none of `in_use` points into (what a loaded model
    // no longer reads: Model::file_data_in_use), so the process keeps one copy of the weights. Those tensors
    // keep their names and shapes, with null data. Returns the bytes freed; 0 for a file read from disk.
    uint64_t release_storage_except(std::span<const void* const> in_use);

private:
    MappedFile file_;
    std::string path_;
    std::vector<AlignedBuffer> storage_;  // assembled views' tensor data
    uint32_t version_ = 0;
    uint64_t alignment_ = 32;
    uint64_t data_offset_ = 0;
    std::vector<std::pair<std::string, GgufValue>> metadata_;
    std::unordered_map<std::string, size_t> metadata_index_;
    std::vector<GgufTensorInfo> tensors_;
    std::unordered_map<std::string, size_t> tensor_index_;
};

}  // namespace tempered
