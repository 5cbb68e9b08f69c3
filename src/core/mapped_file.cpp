#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace tempered {

Result<MappedFile> MappedFile::open(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Error{"cannot open '" + path + "': " + std::strerror(errno)};
    struct stat info {};
    if (::fstat(fd, &info) != 0) {
        int saved = errno;
        ::close(fd);
        return Error{"cannot stat '" + path + "': " + std::strerror(saved)};
    }
    if (!S_ISREG(info.st_mode)) {
        ::close(fd);
        return Error{"'" + path + "' is not a regular file"};
    }
    MappedFile file;
    file.path_ = path;
    file.size_ = static_cast<size_t>(info.st_size);
    if (file.size_ > 0) {
        void* mapping = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (mapping == MAP_FAILED) {
            int saved = errno;
            ::close(fd);
            return Error{"cannot mmap '" + path + "': " + std::strerror(saved)};
        }
        file.data_ = static_cast<const uint8_t*>(mapping);
    }
    ::close(fd);
    return file;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)), path_(std::move(other.path_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
    if (this != &other) {
        if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
        path_ = std::move(other.path_);
    }
    return *this;
}

MappedFile::~MappedFile() {
    if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace tempered
