// FNV-1a, 64 bits, fed field by field: the model fingerprint (formats/model_fingerprint) and what the KV
// transfer's two ends compare (disagg: attention windows, prompt tokens). A check that two honest servers
// hold the same thing, not a defence against a chosen collision.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tempered {

class Fnv1a {
public:
    void bytes(const void* data, size_t size) {
        const auto* p = static_cast<const uint8_t*>(data);
        for (size_t i = 0; i < size; ++i) {
            hash_ ^= p[i];
            hash_ *= 0x100000001b3ULL;
        }
    }
    template <class T>
    void value(T v) {
        bytes(&v, sizeof(v));
    }
    void text(std::string_view s) {
        value<uint64_t>(s.size());  // the length first, so ("ab", "c") and ("a", "bc") differ
        bytes(s.data(), s.size());
    }
    uint64_t hash() const { return hash_; }

private:
    uint64_t hash_ = 0xcbf29ce484222325ULL;
};

}  // namespace tempered
