// A heap byte buffer aligned to a cache line (64 bytes), so that 512-bit loads never split lines.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>

namespace tempered {

class AlignedBuffer {
public:
    AlignedBuffer() = default;
    explicit AlignedBuffer(size_t bytes) : size_(bytes) {
        if (bytes == 0) return;
        const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;  // aligned_alloc's rule
        data_.reset(static_cast<std::byte*>(std::aligned_alloc(kAlignment, rounded)));
        if (!data_) throw std::bad_alloc();
    }

    std::byte* data() { return data_.get(); }
    const std::byte* data() const { return data_.get(); }
    size_t size() const { return size_; }

private:
    static constexpr size_t kAlignment = 64;
    struct Free {
        void operator()(std::byte* p) const { std::free(p); }
    };
    std::unique_ptr<std::byte, Free> data_;
    size_t size_ = 0;
};

}  // namespace tempered
