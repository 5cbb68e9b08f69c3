// libFuzzer target for the GGUF reader: any byte string must parse or fail with an Error, never crash,
// hang, read out of bounds or allocate without bound. On success, walk everything the reader handed out
// so that a bad data pointer or size shows up under ASan here rather than later in a model loader.
#include <cstddef>
#include <cstdint>
#include <span>

#include "formats/gguf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    auto file = tempered::GgufFile::parse(std::span<const uint8_t>(data, size));
    if (!file) return 0;
    uint64_t checksum = 0;
    for (const auto& [key, value] : file->metadata()) {
        checksum += key.size() + value.to_display_string().size();
        if (file->find(key) != &value) __builtin_trap();  // keys are unique
    }
    for (const auto& tensor : file->tensors()) {
        if (tensor.data < data || tensor.size_bytes > size || tensor.data + tensor.size_bytes > data + size)
            __builtin_trap();
        if (tensor.size_bytes) checksum += tensor.data[0] + tensor.data[tensor.size_bytes - 1];
        checksum += tensor.element_count() + tensor.row_count();
    }
    volatile uint64_t sink = checksum;
    (void)sink;
    return 0;
}
