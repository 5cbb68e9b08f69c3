// Metadata values: GgufValue's accessors, its one-line display form (for `tempered inspect`), and
// GgufFile's typed metadata getters.
#include "formats/gguf.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <limits>

namespace tempered {
namespace {

bool is_unsigned_integer(GgufValueType type) {
    return type == GgufValueType::UINT8 || type == GgufValueType::UINT16 || type == GgufValueType::UINT32 ||
           type == GgufValueType::UINT64;
}

bool is_signed_integer(GgufValueType type) {
    return type == GgufValueType::INT8 || type == GgufValueType::INT16 || type == GgufValueType::INT32 ||
           type == GgufValueType::INT64;
}

bool is_float(GgufValueType type) { return type == GgufValueType::FLOAT32 || type == GgufValueType::FLOAT64; }

// Shortest text that reads back to the same value, at the width the file stored it.
std::string format_float(double value, bool single_precision) {
    char buffer[64];
    auto result = single_precision ? std::to_chars(buffer, buffer + sizeof buffer, static_cast<float>(value))
                                   : std::to_chars(buffer, buffer + sizeof buffer, value);
    return std::string(buffer, result.ptr);
}

// Quoted, with control characters, quotes and backslashes escaped so a value stays on one line.
std::string quote(const std::string& text) {
    std::string out = "\"";
    for (unsigned char c : text) {
        switch (c) {
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            default:
                if (c < 0x20 || c == 0x7f) {
                    char escaped[8];
                    std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
                    out += escaped;
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
    out += '"';
    return out;
}

// A zero value of an array's element type, to ask "are its elements integers?" even when it is empty.
GgufValue element_kind(const GgufValue& array) {
    GgufValue kind;
    kind.type = array.element_type;
    return kind;
}

}  // namespace

std::string_view gguf_value_type_name(GgufValueType type) {
    switch (type) {
        case GgufValueType::UINT8: return "uint8";
        case GgufValueType::INT8: return "int8";
        case GgufValueType::UINT16: return "uint16";
        case GgufValueType::INT16: return "int16";
        case GgufValueType::UINT32: return "uint32";
        case GgufValueType::INT32: return "int32";
        case GgufValueType::FLOAT32: return "float32";
        case GgufValueType::BOOL: return "bool";
        case GgufValueType::STRING: return "string";
        case GgufValueType::ARRAY: return "array";
        case GgufValueType::UINT64: return "uint64";
        case GgufValueType::INT64: return "int64";
        case GgufValueType::FLOAT64: return "float64";
    }
    return "unknown";
}

std::optional<int64_t> GgufValue::as_int() const {
    if (is_signed_integer(type)) return signed_value;
    if (is_unsigned_integer(type) && unsigned_value <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return static_cast<int64_t>(unsigned_value);
    return std::nullopt;
}

std::optional<double> GgufValue::as_float() const {
    if (is_float(type)) return float_value;
    if (is_signed_integer(type)) return static_cast<double>(signed_value);
    if (is_unsigned_integer(type)) return static_cast<double>(unsigned_value);
    return std::nullopt;
}

std::optional<bool> GgufValue::as_bool() const {
    if (type == GgufValueType::BOOL) return unsigned_value != 0;
    return std::nullopt;
}

const std::string* GgufValue::as_string() const { return type == GgufValueType::STRING ? &string_value : nullptr; }

std::string GgufValue::to_display_string(size_t max_array_items) const {
    if (is_unsigned_integer(type)) return std::to_string(unsigned_value);
    if (is_signed_integer(type)) return std::to_string(signed_value);
    if (is_float(type)) return format_float(float_value, type == GgufValueType::FLOAT32);
    switch (type) {
        case GgufValueType::BOOL: return unsigned_value ? "true" : "false";
        case GgufValueType::STRING: return quote(string_value);
        case GgufValueType::ARRAY: {
            std::string out = "[";
            const size_t shown = std::min(elements.size(), max_array_items);
            for (size_t i = 0; i < shown; ++i) {
                if (i) out += ", ";
                out += elements[i].to_display_string(max_array_items);
            }
            if (shown < elements.size()) {
                out += shown ? ", ... " : "... ";
                out += std::to_string(elements.size() - shown) + " more";
            }
            return out + "]";
        }
        default: return "?";
    }
}

const GgufValue* GgufFile::find(std::string_view key) const {
    auto it = metadata_index_.find(std::string(key));
    return it == metadata_index_.end() ? nullptr : &metadata_[it->second].second;
}

std::optional<int64_t> GgufFile::get_int(std::string_view key) const {
    const GgufValue* value = find(key);
    return value ? value->as_int() : std::nullopt;
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
    const GgufValue* value = find(key);
    return value ? value->as_float() : std::nullopt;
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
    const GgufValue* value = find(key);
    return value ? value->as_bool() : std::nullopt;
}

std::optional<std::string> GgufFile::get_string(std::string_view key) const {
    const GgufValue* value = find(key);
    const std::string* text = value ? value->as_string() : nullptr;
    return text ? std::optional<std::string>(*text) : std::nullopt;
}

std::optional<std::vector<std::string>> GgufFile::get_string_array(std::string_view key) const {
    const GgufValue* value = find(key);
    if (!value || value->type != GgufValueType::ARRAY || value->element_type != GgufValueType::STRING)
        return std::nullopt;
    std::vector<std::string> out;
    out.reserve(value->elements.size());
    for (const auto& element : value->elements) out.push_back(element.string_value);
    return out;
}

std::optional<std::vector<double>> GgufFile::get_float_array(std::string_view key) const {
    const GgufValue* value = find(key);
    if (!value || value->type != GgufValueType::ARRAY || !element_kind(*value).as_float()) return std::nullopt;
    std::vector<double> out;
    out.reserve(value->elements.size());
    for (const auto& element : value->elements) {
        auto number = element.as_float();
        if (!number) return std::nullopt;
        out.push_back(*number);
    }
    return out;
}

std::optional<std::vector<int64_t>> GgufFile::get_int_array(std::string_view key) const {
    const GgufValue* value = find(key);
    if (!value || value->type != GgufValueType::ARRAY || !element_kind(*value).as_int()) return std::nullopt;
    std::vector<int64_t> out;
    out.reserve(value->elements.size());
    for (const auto& element : value->elements) {
        auto number = element.as_int();
        if (!number) return std::nullopt;
        out.push_back(*number);
    }
    return out;
}

}  // namespace tempered
