#include "formats/model_fingerprint.h"

#include <algorithm>
#include <string_view>

#include "core/fnv1a.h"

namespace tempered {
namespace {

void hash_value(Fnv1a& fnv, const GgufValue& value) {
    fnv.value(static_cast<uint32_t>(value.type));
    fnv.value(value.unsigned_value);
    fnv.value(value.signed_value);
    fnv.value(value.float_value);
    fnv.text(value.string_value);
    fnv.value(static_cast<uint32_t>(value.element_type));
    fnv.value<uint64_t>(value.elements.size());
    for (const GgufValue& element : value.elements) hash_value(fnv, element);
}

}  // namespace

uint64_t model_fingerprint(const GgufFile& file) {
    Fnv1a fnv;
    fnv.value(file.version());
    for (const auto& [key, value] : file.metadata()) {
        fnv.text(key);
        hash_value(fnv, value);
    }
    for (const GgufTensorInfo& tensor : file.tensors()) {
        fnv.text(tensor.name);
        fnv.value<uint64_t>(tensor.dims.size());
        for (uint64_t dim : tensor.dims) fnv.value(dim);
        fnv.value(static_cast<uint32_t>(tensor.type));
        fnv.value(tensor.offset);
        fnv.value(tensor.size_bytes);
        if (tensor.data != nullptr) fnv.bytes(tensor.data, std::min(tensor.size_bytes, kFingerprintBytesPerTensor));
    }
    return fnv.hash();
}

}  // namespace tempered
