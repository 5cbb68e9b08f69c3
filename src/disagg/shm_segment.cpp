#include "disagg/shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace tempered {
namespace {

Error failure(const std::string& what, const std::string& name) {
    return Error{what + " shared memory " + name + ": " + std::strerror(errno)};
}

}  // namespace

std::string ShmSegment::name_for(uint64_t room) {
    return "/tempered-kv-" + std::to_string(::getpid()) + "-" + std::to_string(room);
}

Result<ShmSegment> ShmSegment::create(const std::string& name, size_t size) {
    int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) return failure("cannot create", name);
    ShmSegment segment;
    segment.name_ = name;
    segment.unlink_ = true;  // ours until someone says otherwise: a failure below removes it
    if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
        Error error = failure("cannot size", name);
        ::close(fd);
        return error;
    }
    void* data = size == 0 ? nullptr : ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (data == MAP_FAILED) return failure("cannot map", name);
    segment.data_ = static_cast<uint8_t*>(data);
    segment.size_ = size;
    return segment;
}

Result<ShmSegment> ShmSegment::open(const std::string& name, size_t size) {
    int fd = ::shm_open(name.c_str(), O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) return failure("cannot open", name);
    struct stat status {};
    if (::fstat(fd, &status) != 0 || static_cast<size_t>(status.st_size) < size) {
        ::close(fd);
        return Error{"shared memory " + name + " holds " + std::to_string(status.st_size) + " bytes, expected " +
                     std::to_string(size)};
    }
    void* data = size == 0 ? nullptr : ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    if (data == MAP_FAILED) return failure("cannot map", name);
    ShmSegment segment;
    segment.name_ = name;
    segment.data_ = static_cast<uint8_t*>(data);
    segment.size_ = size;
    return segment;
}

ShmSegment::ShmSegment(ShmSegment&& other) noexcept
    : name_(std::move(other.name_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      unlink_(std::exchange(other.unlink_, false)) {}

ShmSegment& ShmSegment::operator=(ShmSegment&& other) noexcept {
    if (this != &other) {
        this->~ShmSegment();
        new (this) ShmSegment(std::move(other));
    }
    return *this;
}

ShmSegment::~ShmSegment() {
    if (data_ != nullptr) ::munmap(data_, size_);
    if (unlink_) unlink();
}

void ShmSegment::unlink() {
    if (!name_.empty()) ::shm_unlink(name_.c_str());
    unlink_ = false;
}

}  // namespace tempered
