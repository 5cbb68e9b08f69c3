// A POSIX shared-memory segment (shm_open + ftruncate + mmap) for the KV transfer between two servers
// on one machine: the prefill writes the blocks there and sends the name instead of the bytes. The
// creator unlinks it once the decode has copied it (or on any failure); a segment is never left in
// /dev/shm by a transfer that ended, whichever way.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "core/result.h"

namespace tempered {

class ShmSegment {
public:
    // "/tempered-kv-<pid>-<room>": unique per prefill process and room.
    static std::string name_for(uint64_t room);
    // A new segment of `size` bytes, mapped read-write; fails if the name exists.
    static Result<ShmSegment> create(const std::string& name, size_t size);
    // An existing segment, mapped read-only; fails unless it holds at least `size` bytes.
    static Result<ShmSegment> open(const std::string& name, size_t size);

    ShmSegment() = default;
    ShmSegment(ShmSegment&& other) noexcept;
    ShmSegment& operator=(ShmSegment&& other) noexcept;
    ShmSegment(const ShmSegment&) = delete;
    ShmSegment& operator=(const ShmSegment&) = delete;
    ~ShmSegment();  // unmaps; unlinks too when unlink_on_close() was asked

    std::span<uint8_t> bytes() { return {data_, size_}; }
    std::span<const uint8_t> bytes() const { return {data_, size_}; }
    const std::string& name() const { return name_; }
    void unlink_on_close() { unlink_ = true; }
    void unlink();  // removes the name now (the mapping stays until destruction)

private:
    std::string name_;
    uint8_t* data_ = nullptr;
    size_t size_ = 0;
    bool unlink_ = false;
};

}  // namespace tempered
