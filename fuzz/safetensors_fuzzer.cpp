// libFuzzer target for the safetensors reader: any byte string must parse or fail with an Error, never
// crash, hang, read out of bounds or allocate without bound. On success, touch every tensor's first and
// last byte and check that the tensors tile the data buffer, as the reader promises.
#include <cstddef>
#include <cstdint>
#include <span>

#include "formats/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    auto file = tempered::SafetensorsFile::parse(std::span<const uint8_t>(data, size));
    if (!file) return 0;
    uint64_t checksum = 0;
    const uint8_t* expected = nullptr;
    for (const auto& tensor : file->tensors()) {
        const uint8_t* begin = tensor.data.data();
        if (tensor.data.size() > size ||
            (tensor.data.size() && (begin < data || begin + tensor.data.size() > data + size)))
            __builtin_trap();
        if (expected != nullptr && tensor.data.size() && begin != expected) __builtin_trap();  // no gap, no overlap
        if (tensor.data.size()) expected = begin + tensor.data.size();
        if (tensor.data.size()) checksum += tensor.data.front() + tensor.data.back();
        if (file->tensor(tensor.name) != &tensor) __builtin_trap();  // names are unique
        checksum += tensor.element_count() * tempered::safetensors_dtype_bytes(tensor.dtype);
    }
    for (const auto& [key, value] : file->metadata()) checksum += key.size() + value.size();
    volatile uint64_t sink = checksum;
    (void)sink;
    return 0;
}
