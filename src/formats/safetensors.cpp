#include "formats/safetensors.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <utility>

#include "formats/quoted_name.h"

namespace tempered {
namespace {

using nlohmann::json;

// The reference library refuses headers over 100 MB; real ones are tens of kilobytes.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
// A real header nests three deep ({name: {"shape": [...]}}); deeper ones are refused before parsing, so
// that a hostile header cannot make the JSON parser or its value's destructor recurse deeply.
constexpr int kMaxHeaderNesting = 4;
constexpr size_t kMaxShapeDims = 8;

struct DTypeEntry {
    SafetensorsDType dtype;
    std::string_view name;
    uint64_t bytes;
};
constexpr std::array kDTypes = {
    DTypeEntry{SafetensorsDType::BOOL, "BOOL", 1},       DTypeEntry{SafetensorsDType::U8, "U8", 1},
    DTypeEntry{SafetensorsDType::I8, "I8", 1},           DTypeEntry{SafetensorsDType::U16, "U16", 2},
    DTypeEntry{SafetensorsDType::I16, "I16", 2},         DTypeEntry{SafetensorsDType::U32, "U32", 4},
    DTypeEntry{SafetensorsDType::I32, "I32", 4},         DTypeEntry{SafetensorsDType::U64, "U64", 8},
    DTypeEntry{SafetensorsDType::I64, "I64", 8},         DTypeEntry{SafetensorsDType::F16, "F16", 2},
    DTypeEntry{SafetensorsDType::BF16, "BF16", 2},       DTypeEntry{SafetensorsDType::F32, "F32", 4},
    DTypeEntry{SafetensorsDType::F64, "F64", 8},         DTypeEntry{SafetensorsDType::F8_E4M3, "F8_E4M3", 1},
    DTypeEntry{SafetensorsDType::F8_E5M2, "F8_E5M2", 1},
};

const DTypeEntry& entry_of(SafetensorsDType dtype) {
    for (const auto& entry : kDTypes)
        if (entry.dtype == dtype) return entry;
    return kDTypes[0];
}

// The deepest nesting of objects and arrays in JSON text, strings skipped; stops counting past `limit`.
int nesting_depth(std::string_view text, int limit) {
    int depth = 0;
    int deepest = 0;
    bool in_string = false;
    for (size_t i = 0; i < text.size() && deepest <= limit; ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\')
                ++i;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '{' || c == '[') {
            deepest = std::max(deepest, ++depth);
        } else if (c == '}' || c == ']') {
            --depth;
        }
    }
    return deepest;
}

Result<std::vector<uint64_t>> read_unsigned_list(const json& value, std::string_view what, const std::string& name,
                                                 size_t max_items) {
    if (!value.is_array() || value.size() > max_items)
        return Error{"safetensors: tensor " + quoted_name(name) + ": \"" + std::string(what) +
                     "\" must be a list of at most " + std::to_string(max_items) + " non-negative integers"};
    std::vector<uint64_t> out;
    for (const json& item : value) {
        if (!item.is_number_unsigned())
            return Error{"safetensors: tensor " + quoted_name(name) + ": \"" + std::string(what) +
                         "\" holds something that is not a non-negative integer"};
        out.push_back(item.get<uint64_t>());
    }
    return out;
}

// One tensor's entry, checked against the buffer; data not yet placed (the caller checks the tiling).
struct Entry {
    SafetensorsTensor tensor;
    uint64_t begin = 0;
    uint64_t end = 0;
};

Result<Entry> read_entry(const std::string& name, const json& value, uint64_t buffer_bytes) {
    const std::string where = "safetensors: tensor " + quoted_name(name);
    if (!value.is_object()) return Error{where + ": its entry is not an object"};
    const auto dtype_field = value.find("dtype");
    if (dtype_field == value.end() || !dtype_field->is_string()) return Error{where + ": no \"dtype\" string"};
    const auto dtype = safetensors_dtype(dtype_field->get_ref<const std::string&>());
    if (!dtype) return Error{where + ": unknown dtype " + quoted_name(dtype_field->get_ref<const std::string&>())};
    const auto shape_field = value.find("shape");
    const auto offsets_field = value.find("data_offsets");
    if (shape_field == value.end()) return Error{where + ": no \"shape\""};
    if (offsets_field == value.end()) return Error{where + ": no \"data_offsets\""};
    auto shape = read_unsigned_list(*shape_field, "shape", name, kMaxShapeDims);
    if (!shape) return shape.error();
    auto offsets = read_unsigned_list(*offsets_field, "data_offsets", name, 2);
    if (!offsets) return offsets.error();
    if (offsets->size() != 2) return Error{where + ": \"data_offsets\" must be [begin, end]"};
    Entry entry{{name, *dtype, std::move(*shape), {}}, (*offsets)[0], (*offsets)[1]};
    if (entry.begin > entry.end || entry.end > buffer_bytes)
        return Error{where + ": data_offsets [" + std::to_string(entry.begin) + ", " + std::to_string(entry.end) +
                     ") lie outside the " + std::to_string(buffer_bytes) + "-byte data buffer"};
    uint64_t bytes = safetensors_dtype_bytes(*dtype);
    for (uint64_t dim : entry.tensor.shape)
        if (__builtin_mul_overflow(bytes, dim, &bytes)) return Error{where + ": its shape overflows"};
    if (bytes != entry.end - entry.begin)
        return Error{where + ": shape and dtype make " + std::to_string(bytes) + " bytes, data_offsets hold " +
                     std::to_string(entry.end - entry.begin)};
    return entry;
}

Status read_text_metadata(const json& value, std::map<std::string, std::string>& out) {
    if (!value.is_object()) return Error{"safetensors: \"__metadata__\" is not an object"};
    for (const auto& [key, text] : value.items()) {
        if (!text.is_string())
            return Error{"safetensors: \"__metadata__\" value " + quoted_name(key) + " is not a string"};
        out.emplace(key, text.get<std::string>());
    }
    return Ok{};
}

// The tensors must tile the buffer: sorted by offset, each begins where the previous ended, the last
// ends at the buffer's end.
Status check_tiling(std::vector<Entry>& entries, uint64_t buffer_bytes) {
    std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
        return std::pair(a.begin, a.end) < std::pair(b.begin, b.end);
    });
    uint64_t expected = 0;
    for (const Entry& entry : entries) {
        if (entry.begin != expected)
            return Error{"safetensors: tensor " + quoted_name(entry.tensor.name) + " begins at byte " +
                         std::to_string(entry.begin) + " of the data buffer, expected " + std::to_string(expected) +
                         (entry.begin < expected ? " (it overlaps the tensor before)" : " (a gap before it)")};
        expected = entry.end;
    }
    if (expected != buffer_bytes)
        return Error{"safetensors: the tensors end at byte " + std::to_string(expected) + " of a " +
                     std::to_string(buffer_bytes) + "-byte data buffer"};
    return Ok{};
}

}  // namespace

std::optional<SafetensorsDType> safetensors_dtype(std::string_view name) {
    for (const auto& entry : kDTypes)
        if (entry.name == name) return entry.dtype;
    return std::nullopt;
}
std::string_view safetensors_dtype_name(SafetensorsDType dtype) { return entry_of(dtype).name; }
uint64_t safetensors_dtype_bytes(SafetensorsDType dtype) { return entry_of(dtype).bytes; }

uint64_t SafetensorsTensor::element_count() const {
    uint64_t count = 1;
    for (uint64_t dim : shape) count *= dim;  // checked against the data's size when parsed
    return count;
}

Result<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
    auto mapped = MappedFile::open(path);
    if (!mapped) return mapped.error();
    auto parsed = parse(mapped->bytes());
    if (!parsed) return Error{path + ": " + parsed.error().message};
    parsed->file_ = std::move(mapped).value();  // the spans point into the mapping, which moves, not copies
    return parsed;
}

Result<SafetensorsFile> SafetensorsFile::parse(std::span<const uint8_t> bytes) {
    if (bytes.size() < 8)
        return Error{"safetensors: " + std::to_string(bytes.size()) + " bytes, too short for a header"};
    uint64_t header_bytes = 0;
    for (int i = 7; i >= 0; --i) header_bytes = header_bytes << 8 | bytes[static_cast<size_t>(i)];
    if (header_bytes > kMaxHeaderBytes || header_bytes > bytes.size() - 8)
        return Error{"safetensors: a header of " + std::to_string(header_bytes) + " bytes does not fit the " +
                     std::to_string(bytes.size()) + "-byte file (or passes the 100 MB limit)"};
    const std::string_view header(reinterpret_cast<const char*>(bytes.data() + 8), header_bytes);
    if (header.empty() || header.front() != '{') return Error{"safetensors: the header is not a JSON object"};
    if (nesting_depth(header, kMaxHeaderNesting) > kMaxHeaderNesting)
        return Error{"safetensors: the header nests deeper than a safetensors header does"};
    const json root = json::parse(header, nullptr, /*allow_exceptions=*/false);
    if (root.is_discarded() || !root.is_object()) return Error{"safetensors: the header is not valid JSON"};

    const std::span<const uint8_t> buffer = bytes.subspan(8 + header_bytes);
    SafetensorsFile file;
    std::vector<Entry> entries;
    for (const auto& [name, value] : root.items()) {
        if (name == "__metadata__") {
            if (auto read = read_text_metadata(value, file.metadata_); !read) return read.error();
            continue;
        }
        auto entry = read_entry(name, value, buffer.size());
        if (!entry) return entry.error();
        entries.push_back(std::move(entry).value());
    }
    if (auto tiled = check_tiling(entries, buffer.size()); !tiled) return tiled.error();
    for (Entry& entry : entries) {
        entry.tensor.data = buffer.subspan(entry.begin, entry.end - entry.begin);
        file.index_.emplace(entry.tensor.name, file.tensors_.size());
        file.tensors_.push_back(std::move(entry.tensor));
    }
    return file;
}

const SafetensorsTensor* SafetensorsFile::tensor(std::string_view name) const {
    const auto it = index_.find(std::string(name));
    return it == index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace tempered
