// An in-memory GGUF writer for tests. It writes what it is told, including things a reader must reject
// (wrong counts, unknown type ids, offsets outside the file), so tests can build both valid files and
// precise malformations. Little-endian hosts only, like the reader.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tempered::testing {

// Encoders for the pieces of a GGUF file; also used to build raw value payloads (nested arrays).
namespace gguf_encode {

template <class T>
void put(std::vector<uint8_t>& out, T value) {
    uint8_t raw[sizeof(T)];
    std::memcpy(raw, &value, sizeof(T));
    for (uint8_t byte : raw) out.push_back(byte);  // not insert(): GCC 12 -O3 warns falsely on it
}

inline void put_string(std::vector<uint8_t>& out, std::string_view text) {
    put<uint64_t>(out, text.size());
    for (char c : text) out.push_back(static_cast<uint8_t>(c));
}

// An array payload (element type, count, elements) of fixed-size scalars.
template <class T>
std::vector<uint8_t> array(uint32_t element_type, const std::vector<T>& values) {
    std::vector<uint8_t> out;
    put<uint32_t>(out, element_type);
    put<uint64_t>(out, values.size());
    for (const T& value : values) put<T>(out, value);
    return out;
}

inline std::vector<uint8_t> string_array(const std::vector<std::string>& values) {
    std::vector<uint8_t> out;
    put<uint32_t>(out, 8);  // STRING
    put<uint64_t>(out, values.size());
    for (const auto& value : values) put_string(out, value);
    return out;
}

// An array of arrays: each element is an array payload as built above (all of one element type).
inline std::vector<uint8_t> array_of_arrays(const std::vector<std::vector<uint8_t>>& payloads) {
    std::vector<uint8_t> out;
    put<uint32_t>(out, 9);  // ARRAY
    put<uint64_t>(out, payloads.size());
    for (const auto& payload : payloads)
        for (uint8_t byte : payload) out.push_back(byte);
    return out;
}

}  // namespace gguf_encode

struct GgufTensorSpec {
    std::string name;
    std::vector<uint64_t> dims;
    uint32_t type_id = 0;
    std::vector<uint8_t> data;       // written at the tensor's offset in the data section
    std::optional<uint64_t> offset;  // default: the next aligned offset after the previous tensor
};

class GgufWriter {
public:
    explicit GgufWriter(uint32_t version = 3) : version_(version) {}

    // Layout alignment for tensor offsets and the data section; add a `general.alignment` key yourself
    // when it differs from the default 32.
    GgufWriter& layout_alignment(uint64_t alignment) {
        alignment_ = alignment;
        return *this;
    }
    // Counts written in the header instead of the real ones.
    GgufWriter& claim_tensor_count(uint64_t count) {
        tensor_count_ = count;
        return *this;
    }
    GgufWriter& claim_metadata_count(uint64_t count) {
        metadata_count_ = count;
        return *this;
    }

    template <class T>
    GgufWriter& scalar(std::string_view key, uint32_t type_id, T value) {
        std::vector<uint8_t> payload;
        gguf_encode::put<T>(payload, value);
        return raw(key, type_id, payload);
    }
    GgufWriter& u8(std::string_view key, uint8_t v) { return scalar(key, 0, v); }
    GgufWriter& i8(std::string_view key, int8_t v) { return scalar(key, 1, v); }
    GgufWriter& u16(std::string_view key, uint16_t v) { return scalar(key, 2, v); }
    GgufWriter& i16(std::string_view key, int16_t v) { return scalar(key, 3, v); }
    GgufWriter& u32(std::string_view key, uint32_t v) { return scalar(key, 4, v); }
    GgufWriter& i32(std::string_view key, int32_t v) { return scalar(key, 5, v); }
    GgufWriter& f32(std::string_view key, float v) { return scalar(key, 6, v); }
    GgufWriter& boolean(std::string_view key, bool v) { return scalar<uint8_t>(key, 7, v ? 1 : 0); }
    GgufWriter& u64(std::string_view key, uint64_t v) { return scalar(key, 10, v); }
    GgufWriter& i64(std::string_view key, int64_t v) { return scalar(key, 11, v); }
    GgufWriter& f64(std::string_view key, double v) { return scalar(key, 12, v); }
    GgufWriter& string(std::string_view key, std::string_view v) {
        std::vector<uint8_t> payload;
        gguf_encode::put_string(payload, v);
        return raw(key, 8, payload);
    }
    GgufWriter& array(std::string_view key, const std::vector<uint8_t>& payload) { return raw(key, 9, payload); }

    // Any key, any type id, any payload bytes.
    GgufWriter& raw(std::string_view key, uint32_t type_id, const std::vector<uint8_t>& payload) {
        gguf_encode::put_string(metadata_, key);
        gguf_encode::put<uint32_t>(metadata_, type_id);
        for (uint8_t byte : payload) metadata_.push_back(byte);
        ++metadata_written_;
        return *this;
    }

    GgufWriter& tensor(GgufTensorSpec spec) {
        tensors_.push_back(std::move(spec));
        return *this;
    }

    std::vector<uint8_t> bytes() const {
        std::vector<uint8_t> out;
        for (char c : std::string_view("GGUF")) out.push_back(static_cast<uint8_t>(c));
        gguf_encode::put<uint32_t>(out, version_);
        gguf_encode::put<uint64_t>(out, tensor_count_.value_or(tensors_.size()));
        gguf_encode::put<uint64_t>(out, metadata_count_.value_or(metadata_written_));
        for (uint8_t byte : metadata_) out.push_back(byte);

        std::vector<uint64_t> offsets;
        uint64_t next = 0;
        for (const auto& spec : tensors_) {
            const uint64_t offset = spec.offset.value_or(next);
            offsets.push_back(offset);
            next = align_up(offset + spec.data.size());
            gguf_encode::put_string(out, spec.name);
            gguf_encode::put<uint32_t>(out, static_cast<uint32_t>(spec.dims.size()));
            for (uint64_t dim : spec.dims) gguf_encode::put<uint64_t>(out, dim);
            gguf_encode::put<uint32_t>(out, spec.type_id);
            gguf_encode::put<uint64_t>(out, offset);
        }
        if (tensors_.empty()) return out;
        out.resize(align_up(out.size()), 0);
        const uint64_t data_start = out.size();
        for (size_t i = 0; i < tensors_.size(); ++i) {
            const auto& data = tensors_[i].data;
            if (data.empty()) continue;
            if (offsets[i] > (uint64_t{1} << 24)) continue;  // an offset meant to point outside the file
            const uint64_t end = data_start + offsets[i] + data.size();
            if (out.size() < end) out.resize(end, 0);
            std::memcpy(out.data() + data_start + offsets[i], data.data(), data.size());
        }
        return out;
    }

private:
    uint64_t align_up(uint64_t value) const { return (value + alignment_ - 1) / alignment_ * alignment_; }

    uint32_t version_;
    uint64_t alignment_ = 32;
    std::optional<uint64_t> tensor_count_;
    std::optional<uint64_t> metadata_count_;
    std::vector<uint8_t> metadata_;
    size_t metadata_written_ = 0;
    std::vector<GgufTensorSpec> tensors_;
};

}  // namespace tempered::testing
