// GGUF reader. Layout (little-endian):
//   magic "GGUF" | version u32 | tensor_count u64 | metadata_count u64
//   metadata_count x (key string, value type u32, value)
//   tensor_count x (name string, n_dims u32, dims u64[n_dims], type u32, offset u64)
//   padding to `general.alignment` (default 32) | tensor data, each tensor at data_offset + offset
// A string is a u64 byte length and the bytes; an array is an element type u32, a u64 count and the
// elements. Nothing read from the file is trusted: every count is compared with the bytes left before
// anything is reserved, and all offset arithmetic is overflow-checked.
#include "formats/gguf.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <limits>
#include <utility>

#include "formats/quoted_name.h"

namespace tempered {
namespace {

constexpr uint32_t kMaxDims = 4;     // ggml's GGML_MAX_DIMS
constexpr int kMaxArrayNesting = 8;  // arrays of arrays deeper than this are rejected
constexpr uint64_t kDefaultAlignment = 32;
// Each array element becomes a GgufValue (~100 bytes) however few bytes it took in the file, so a file
// of one-byte elements would cost 100x its size in memory. Real vocabularies need well under a million.
constexpr uint64_t kMaxArrayElementsTotal = uint64_t{1} << 24;
constexpr uint64_t kMinMetadataBytes = 8 + 4 + 1;        // key length, value type, smallest value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;  // name length, n_dims, type, offset

// Overflow-checked arithmetic on sizes and offsets read from the file.
bool checked_add(uint64_t a, uint64_t b, uint64_t& out) { return !__builtin_add_overflow(a, b, &out); }
bool checked_mul(uint64_t a, uint64_t b, uint64_t& out) { return !__builtin_mul_overflow(a, b, &out); }
bool checked_align_up(uint64_t value, uint64_t alignment, uint64_t& out) {
    uint64_t bumped = 0;
    if (!checked_add(value, alignment - 1, bumped)) return false;
    out = bumped / alignment * alignment;
    return true;
}

// Smallest encoding of one value of `type`, so that a claimed element count can be compared with the
// bytes left before anything is allocated. Arrays of arrays need at least an element type and a count.
uint64_t min_value_bytes(GgufValueType type) {
    switch (type) {
        case GgufValueType::UINT8:
        case GgufValueType::INT8:
        case GgufValueType::BOOL: return 1;
        case GgufValueType::UINT16:
        case GgufValueType::INT16: return 2;
        case GgufValueType::UINT32:
        case GgufValueType::INT32:
        case GgufValueType::FLOAT32: return 4;
        case GgufValueType::UINT64:
        case GgufValueType::INT64:
        case GgufValueType::FLOAT64: return 8;
        case GgufValueType::STRING: return 8;
        case GgufValueType::ARRAY: return 4 + 8;
    }
    return 1;
}

bool is_known_value_type(uint32_t id) { return id <= static_cast<uint32_t>(GgufValueType::FLOAT64); }

struct ParsedTensor {
    GgufTensorInfo info;
    uint64_t info_offset = 0;  // where its tensor info starts, for error messages
};

// The fields of a GgufFile, filled by Parser and moved into the file by GgufFile::parse.
struct ParsedGguf {
    uint32_t version = 0;
    uint64_t alignment = kDefaultAlignment;
    uint64_t data_offset = 0;
    std::vector<std::pair<std::string, GgufValue>> metadata;
    std::vector<ParsedTensor> tensors;
};

// Reads the file front to back. Each step returns false after recording the first error, which names
// what was being read (the metadata key or tensor in `context_`) and the byte offset it starts at.
class Parser {
public:
    explicit Parser(std::span<const uint8_t> bytes) : bytes_(bytes) {}

    bool parse(ParsedGguf& out) {
        return read_header(out) && read_metadata(out) && resolve_alignment(out) && read_tensor_infos(out) &&
               place_tensor_data(out) && check_no_overlap(out);
    }

    const std::string& error() const { return error_; }

private:
    std::span<const uint8_t> bytes_;
    uint64_t position_ = 0;
    uint64_t metadata_count_ = 0;  // both checked against the file size in read_header
    uint64_t tensor_count_ = 0;
    uint64_t array_elements_ = 0;  // across all arrays, nested included; capped by kMaxArrayElementsTotal
    std::string context_;          // "metadata 'key'" or "tensor 'name'" while reading one
    std::string error_;

    uint64_t remaining() const { return bytes_.size() - position_; }

    bool fail(std::string message) {
        error_ = "gguf: " + (context_.empty() ? "" : context_ + ": ") + std::move(message);
        return false;
    }
    bool fail_at(uint64_t offset, const std::string& message) {
        return fail(message + " (at byte " + std::to_string(offset) + ")");
    }

    // `what` names the field; `what_suffix` is appended only when building a message, so that the hot
    // path (a string per token) allocates nothing.
    bool need(uint64_t count, std::string_view what, std::string_view what_suffix = {}) {
        if (count <= remaining()) return true;
        return fail_at(position_, std::string(what) + std::string(what_suffix) + " needs " + std::to_string(count) +
                                      " bytes but only " + std::to_string(remaining()) + " remain (file size " +
                                      std::to_string(bytes_.size()) + ")");
    }

    template <class T>
    bool read(T& out, std::string_view what, std::string_view what_suffix = {}) {
        if (!need(sizeof(T), what, what_suffix)) return false;
        std::memcpy(&out, bytes_.data() + position_, sizeof(T));
        position_ += sizeof(T);
        return true;
    }

    bool read_string(std::string& out, std::string_view what) {
        const uint64_t start = position_;
        uint64_t length = 0;
        if (!read(length, what, " length")) return false;
        if (length > remaining())
            return fail_at(start, std::string(what) + " length " + std::to_string(length) + " exceeds the " +
                                      std::to_string(remaining()) + " bytes left in the file");
        out.assign(reinterpret_cast<const char*>(bytes_.data() + position_), length);
        position_ += length;
        return true;
    }

    bool read_header(ParsedGguf& out) {
        if (bytes_.size() < 4)
            return fail("file is " + std::to_string(bytes_.size()) + " bytes, too short to hold the GGUF magic");
        if (std::memcmp(bytes_.data(), "GGUF", 4) != 0) {
            std::string shown;
            for (int i = 0; i < 4; ++i) {
                char hex[4];
                std::snprintf(hex, sizeof hex, "%02x", bytes_[i]);
                shown += hex;
            }
            return fail_at(0, "bad magic 0x" + shown + ", expected \"GGUF\": not a GGUF file");
        }
        position_ = 4;
        uint32_t version = 0;
        if (!read(version, "version")) return false;
        if (version == 1)
            return fail_at(4,
                           "GGUF version 1 is not supported (only versions 2 and 3); "
                           "re-convert the model with a current llama.cpp");
        if (__builtin_bswap32(version) == 2 || __builtin_bswap32(version) == 3)
            return fail_at(4, "big-endian GGUF files are not supported");
        if (version != 2 && version != 3)
            return fail_at(4, "unsupported GGUF version " + std::to_string(version) + " (only versions 2 and 3)");
        out.version = version;

        uint64_t tensor_count = 0, metadata_count = 0;
        const uint64_t tensor_count_offset = position_;
        if (!read(tensor_count, "tensor count") || !read(metadata_count, "metadata count")) return false;
        if (metadata_count > remaining() / kMinMetadataBytes)
            return fail_at(tensor_count_offset + 8, "metadata count " + std::to_string(metadata_count) +
                                                        " cannot fit in the " + std::to_string(remaining()) +
                                                        " bytes left in the file");
        if (tensor_count > remaining() / kMinTensorInfoBytes)
            return fail_at(tensor_count_offset, "tensor count " + std::to_string(tensor_count) + " cannot fit in the " +
                                                    std::to_string(remaining()) + " bytes left in the file");
        metadata_count_ = metadata_count;
        tensor_count_ = tensor_count;
        out.metadata.reserve(metadata_count);
        out.tensors.reserve(tensor_count);
        return true;
    }

    bool read_metadata(ParsedGguf& out) {
        std::unordered_map<std::string, uint64_t> key_offsets;
        for (uint64_t i = 0; i < metadata_count_; ++i) {
            context_.clear();
            const uint64_t key_offset = position_;
            std::string key;
            if (!read_string(key, "metadata key #" + std::to_string(i))) return false;
            if (key.empty()) return fail_at(key_offset, "metadata key #" + std::to_string(i) + " is empty");
            auto [existing, inserted] = key_offsets.emplace(key, key_offset);
            if (!inserted)
                return fail("duplicate metadata key " + quoted_name(key) + " at byte " + std::to_string(key_offset) +
                            " (first at byte " + std::to_string(existing->second) + ")");
            context_ = "metadata " + quoted_name(key);
            uint32_t type_id = 0;
            const uint64_t type_offset = position_;
            if (!read(type_id, "value type")) return false;
            if (!is_known_value_type(type_id))
                return fail_at(type_offset, "unknown value type id " + std::to_string(type_id));
            GgufValue value;
            if (!read_value(static_cast<GgufValueType>(type_id), value, 0)) return false;
            out.metadata.emplace_back(std::move(key), std::move(value));
        }
        context_.clear();
        return true;
    }

    bool read_value(GgufValueType type, GgufValue& value, int nesting) {
        value.type = type;
        switch (type) {
            case GgufValueType::UINT8: return read_unsigned<uint8_t>(value);
            case GgufValueType::UINT16: return read_unsigned<uint16_t>(value);
            case GgufValueType::UINT32: return read_unsigned<uint32_t>(value);
            case GgufValueType::UINT64: return read_unsigned<uint64_t>(value);
            case GgufValueType::INT8: return read_signed<int8_t>(value);
            case GgufValueType::INT16: return read_signed<int16_t>(value);
            case GgufValueType::INT32: return read_signed<int32_t>(value);
            case GgufValueType::INT64: return read_signed<int64_t>(value);
            case GgufValueType::FLOAT32: {
                float f = 0;
                if (!read(f, "float32 value")) return false;
                value.float_value = f;
                return true;
            }
            case GgufValueType::FLOAT64: return read(value.float_value, "float64 value");
            case GgufValueType::BOOL: {
                const uint64_t offset = position_;
                uint8_t b = 0;
                if (!read(b, "bool value")) return false;
                if (b > 1) return fail_at(offset, "bool value is " + std::to_string(b) + ", not 0 or 1");
                value.unsigned_value = b;
                return true;
            }
            case GgufValueType::STRING: return read_string(value.string_value, "string value");
            case GgufValueType::ARRAY: return read_array(value, nesting);
        }
        return fail_at(position_, "unknown value type");
    }

    template <class T>
    bool read_unsigned(GgufValue& value) {
        T v{};
        if (!read(v, gguf_value_type_name(value.type), " value")) return false;
        value.unsigned_value = v;
        return true;
    }
    template <class T>
    bool read_signed(GgufValue& value) {
        T v{};
        if (!read(v, gguf_value_type_name(value.type), " value")) return false;
        value.signed_value = v;
        return true;
    }

    bool read_array(GgufValue& value, int nesting) {
        const uint64_t start = position_;
        if (nesting >= kMaxArrayNesting)
            return fail_at(start, "arrays nested deeper than " + std::to_string(kMaxArrayNesting));
        uint32_t element_type_id = 0;
        uint64_t count = 0;
        if (!read(element_type_id, "array element type")) return false;
        if (!is_known_value_type(element_type_id))
            return fail_at(start, "unknown array element type id " + std::to_string(element_type_id));
        const auto element_type = static_cast<GgufValueType>(element_type_id);
        if (!read(count, "array length")) return false;
        const uint64_t min_bytes = min_value_bytes(element_type);
        if (count > remaining() / min_bytes)
            return fail_at(start + 4, "array of " + std::to_string(count) + " " +
                                          std::string(gguf_value_type_name(element_type)) +
                                          " elements cannot fit in the " + std::to_string(remaining()) +
                                          " bytes left in the file");
        array_elements_ += count;  // cannot overflow: each count is below the file size
        if (array_elements_ > kMaxArrayElementsTotal)
            return fail_at(start + 4,
                           "arrays hold more than " + std::to_string(kMaxArrayElementsTotal) + " elements in total");
        value.element_type = element_type;
        value.elements.resize(count);
        for (auto& element : value.elements)
            if (!read_value(element_type, element, nesting + 1)) return false;
        return true;
    }

    bool resolve_alignment(ParsedGguf& out) {
        for (const auto& [key, value] : out.metadata) {
            if (key != "general.alignment") continue;
            context_ = "metadata 'general.alignment'";
            // Any integer type; a uint64 above INT64_MAX is not an int64 but still a candidate.
            uint64_t alignment = 0;
            if (const auto as_int = value.as_int())
                alignment = *as_int > 0 ? static_cast<uint64_t>(*as_int) : 0;
            else if (value.type == GgufValueType::UINT64)
                alignment = value.unsigned_value;
            else
                return fail("must be an integer, not " + std::string(gguf_value_type_name(value.type)));
            if (!std::has_single_bit(alignment))
                return fail("value " + value.to_display_string() + " is not a nonzero power of two");
            out.alignment = alignment;
            context_.clear();
        }
        return true;
    }

    bool read_tensor_infos(ParsedGguf& out) {
        std::unordered_map<std::string, uint64_t> name_offsets;
        for (uint64_t i = 0; i < tensor_count_; ++i) {
            context_.clear();
            ParsedTensor tensor;
            tensor.info_offset = position_;
            GgufTensorInfo& info = tensor.info;
            if (!read_string(info.name, "tensor info #" + std::to_string(i) + " name")) return false;
            if (info.name.empty())
                return fail_at(tensor.info_offset, "tensor info #" + std::to_string(i) + " has an empty name");
            auto [existing, inserted] = name_offsets.emplace(info.name, tensor.info_offset);
            if (!inserted)
                return fail("duplicate tensor name " + quoted_name(info.name) + " at byte " +
                            std::to_string(tensor.info_offset) + " (first at byte " + std::to_string(existing->second) +
                            ")");
            context_ = "tensor " + quoted_name(info.name);
            if (!read_dims(info)) return false;
            uint32_t type_id = 0;
            const uint64_t type_offset = position_;
            if (!read(type_id, "type")) return false;
            const auto traits = dtype_traits(type_id);
            if (!traits)
                return fail_at(type_offset, "unknown or unsupported tensor type id " + std::to_string(type_id));
            info.type = traits->type;
            if (!read(info.offset, "data offset")) return false;
            out.tensors.push_back(std::move(tensor));
        }
        context_.clear();
        if (!checked_align_up(position_, out.alignment, out.data_offset))
            return fail("data section offset overflows when aligned to " + std::to_string(out.alignment));
        return true;
    }

    bool read_dims(GgufTensorInfo& info) {
        const uint64_t n_dims_offset = position_;
        uint32_t n_dims = 0;
        if (!read(n_dims, "dimension count")) return false;
        if (n_dims > kMaxDims)
            return fail_at(n_dims_offset, "dimension count " + std::to_string(n_dims) + " exceeds the maximum of " +
                                              std::to_string(kMaxDims));
        info.dims.resize(n_dims);
        uint64_t elements = 1;
        for (uint32_t d = 0; d < n_dims; ++d) {
            const uint64_t dim_offset = position_;
            if (!read(info.dims[d], "dimension " + std::to_string(d))) return false;
            if (info.dims[d] == 0) return fail_at(dim_offset, "dimension " + std::to_string(d) + " is 0");
            if (!checked_mul(elements, info.dims[d], elements) ||
                elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
                return fail_at(n_dims_offset, "element count of dims " + dims_text(info.dims, d + 1) + " overflows");
        }
        return true;
    }

    static std::string dims_text(const std::vector<uint64_t>& dims, size_t count) {
        std::string text = "[";
        for (size_t i = 0; i < count; ++i) text += (i ? ", " : "") + std::to_string(dims[i]);
        return text + "]";
    }

    bool fail_tensor(const ParsedTensor& tensor, const std::string& message) {
        context_ = "tensor " + quoted_name(tensor.info.name);
        return fail(message + " (tensor info at byte " + std::to_string(tensor.info_offset) + ")");
    }

    // Sizes each tensor from its shape and type and checks that its data lies inside the file.
    bool place_tensor_data(ParsedGguf& out) {
        const uint64_t file_size = bytes_.size();
        for (auto& tensor : out.tensors) {
            GgufTensorInfo& info = tensor.info;
            if (info.offset % out.alignment != 0)
                return fail_tensor(tensor, "data offset " + std::to_string(info.offset) +
                                               " is not a multiple of the alignment " + std::to_string(out.alignment));
            const DTypeTraits& traits = dtype_traits(info.type);
            if (info.row_length() % traits.block_elements != 0)
                return fail_tensor(tensor, "row length " + std::to_string(info.row_length()) +
                                               " is not a whole number of " + std::string(traits.name) + " blocks of " +
                                               std::to_string(traits.block_elements));
            uint64_t row_bytes = 0;
            if (!checked_mul(info.row_length() / traits.block_elements, traits.block_bytes, row_bytes) ||
                !checked_mul(row_bytes, info.row_count(), info.size_bytes))
                return fail_tensor(tensor, "byte size of " + std::string(traits.name) + " dims " +
                                               dims_text(info.dims, info.dims.size()) + " overflows");
            uint64_t start = 0, end = 0;
            if (!checked_add(out.data_offset, info.offset, start) || !checked_add(start, info.size_bytes, end))
                return fail_tensor(tensor, "data offset " + std::to_string(info.offset) + " overflows");
            if (end > file_size)
                return fail_tensor(tensor, "data range [" + std::to_string(start) + ", " + std::to_string(end) +
                                               ") exceeds file size " + std::to_string(file_size));
            info.data = bytes_.data() + start;
        }
        return true;
    }

    bool check_no_overlap(const ParsedGguf& out) {
        std::vector<const ParsedTensor*> by_offset;
        by_offset.reserve(out.tensors.size());
        for (const auto& tensor : out.tensors) by_offset.push_back(&tensor);
        std::sort(by_offset.begin(), by_offset.end(),
                  [](const ParsedTensor* a, const ParsedTensor* b) { return a->info.offset < b->info.offset; });
        const ParsedTensor* previous = nullptr;
        for (const ParsedTensor* tensor : by_offset) {
            if (tensor->info.size_bytes == 0) continue;
            if (previous && tensor->info.offset < previous->info.offset + previous->info.size_bytes)
                return fail_tensor(*tensor, "data range " + range_text(out, tensor->info) + " overlaps tensor " +
                                                quoted_name(previous->info.name) + " at " +
                                                range_text(out, previous->info));
            previous = tensor;
        }
        return true;
    }

    static std::string range_text(const ParsedGguf& out, const GgufTensorInfo& info) {
        const uint64_t start = out.data_offset + info.offset;  // checked in place_tensor_data
        return "[" + std::to_string(start) + ", " + std::to_string(start + info.size_bytes) + ")";
    }
};

}  // namespace

uint64_t GgufTensorInfo::element_count() const {
    uint64_t count = 1;
    for (uint64_t dim : dims) count *= dim;  // the reader checked that this does not overflow
    return count;
}

Result<GgufFile> GgufFile::parse(std::span<const uint8_t> bytes) {
    ParsedGguf parsed;
    Parser parser(bytes);
    if (!parser.parse(parsed)) return Error{parser.error()};

    GgufFile file;
    file.version_ = parsed.version;
    file.alignment_ = parsed.alignment;
    file.data_offset_ = parsed.data_offset;
    file.metadata_ = std::move(parsed.metadata);
    for (size_t i = 0; i < file.metadata_.size(); ++i) file.metadata_index_.emplace(file.metadata_[i].first, i);
    file.tensors_.reserve(parsed.tensors.size());
    for (auto& tensor : parsed.tensors) {
        file.tensor_index_.emplace(tensor.info.name, file.tensors_.size());
        file.tensors_.push_back(std::move(tensor.info));
    }
    return file;
}

Result<GgufFile> GgufFile::open(const std::string& path) {
    auto mapped = MappedFile::open(path);
    if (!mapped) return Error{"gguf: " + mapped.error().message};
    auto file = parse(mapped->bytes());
    if (!file) {
        std::string message = file.error().message;
        message.insert(std::string_view("gguf: ").size(), path + ": ");
        return Error{std::move(message)};
    }
    file->file_ = std::move(mapped.value());  // the mapping's address, and so every tensor's data, stays put
    file->path_ = path;
    return file;
}

GgufFile GgufFile::assemble(std::string path, std::vector<std::pair<std::string, GgufValue>> metadata,
                            std::vector<GgufTensorInfo> tensors, std::vector<AlignedBuffer> storage) {
    GgufFile file;
    file.version_ = 3;
    file.path_ = std::move(path);
    file.metadata_ = std::move(metadata);
    for (size_t i = 0; i < file.metadata_.size(); ++i) file.metadata_index_.emplace(file.metadata_[i].first, i);
    file.tensors_ = std::move(tensors);
    for (size_t i = 0; i < file.tensors_.size(); ++i) file.tensor_index_.emplace(file.tensors_[i].name, i);
    file.storage_ = std::move(storage);  // moving the buffers keeps their addresses
    return file;
}

uint64_t GgufFile::release_storage_except(std::span<const void* const> in_use) {
    uint64_t freed = 0;
    for (AlignedBuffer& buffer : storage_) {
        const auto* begin = reinterpret_cast<const uint8_t*>(buffer.data());
        const auto* end = begin + buffer.size();
        const bool used = std::any_of(in_use.begin(), in_use.end(), [&](const void* pointer) {
            const auto* at = static_cast<const uint8_t*>(pointer);
            return at >= begin && at < end;
        });
        if (used || buffer.size() == 0) continue;
        for (GgufTensorInfo& tensor : tensors_)
            if (tensor.data >= begin && tensor.data < end) tensor.data = nullptr;
        freed += buffer.size();
        buffer = AlignedBuffer();
    }
    return freed;
}

const GgufTensorInfo* GgufFile::tensor(std::string_view name) const {
    auto it = tensor_index_.find(std::string(name));
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace tempered
