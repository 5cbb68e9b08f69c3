// A cheap identity of a model's weights, so that two servers exchanging KV (prefill/decode
// disaggregation) can tell that they run the same model before any KV crosses between them.
#pragma once

#include <cstdint>

#include "formats/gguf.h"

namespace tempered {

// FNV-1a (64 bits) over: the GGUF version; every metadata key with its type and value (arrays element by
// element, so the whole vocabulary counts); every tensor's name, dims, type, offset and size; and the first
// kFingerprintBytesPerTensor bytes of every tensor's data. Two fine-tunes of one architecture share the
// metadata and tensor infos but not their weights, and differ in the first bytes of nearly every tensor;
// reading one page per tensor keeps it to a few milliseconds on any model. Not a cryptographic identity:
// it guards against operator mistakes (two different files), not against a forger.
inline constexpr uint64_t kFingerprintBytesPerTensor = 4096;
uint64_t model_fingerprint(const GgufFile& file);

}  // namespace tempered
