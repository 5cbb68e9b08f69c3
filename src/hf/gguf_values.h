// GGUF metadata values made in memory, for the metadata a Hugging Face directory is read as.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "formats/gguf.h"

namespace tempered {

inline GgufValue gguf_string(std::string text) {
    GgufValue value;
    value.type = GgufValueType::STRING;
    value.string_value = std::move(text);
    return value;
}
inline GgufValue gguf_uint(uint64_t number) {
    GgufValue value;
    value.type = GgufValueType::UINT32;
    value.unsigned_value = number;
    return value;
}
inline GgufValue gguf_int(int64_t number) {
    GgufValue value;
    value.type = GgufValueType::INT32;
    value.signed_value = number;
    return value;
}
inline GgufValue gguf_float(double number) {
    GgufValue value;
    value.type = GgufValueType::FLOAT32;
    value.float_value = number;
    return value;
}
inline GgufValue gguf_bool(bool flag) {
    GgufValue value;
    value.type = GgufValueType::BOOL;
    value.unsigned_value = flag ? 1 : 0;
    return value;
}
inline GgufValue gguf_array(GgufValueType element_type, std::vector<GgufValue> elements) {
    GgufValue value;
    value.type = GgufValueType::ARRAY;
    value.element_type = element_type;
    value.elements = std::move(elements);
    return value;
}

}  // namespace tempered
