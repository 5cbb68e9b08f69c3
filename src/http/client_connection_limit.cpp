#include "http/client_connection_limit.h"

namespace tempered::http {

bool ClientConnectionLimit::try_open(const std::string& address) {
    if (max_per_client_ == 0) return true;
    std::lock_guard lock(mutex_);
    size_t& count = open_[address];
    if (count >= max_per_client_) return false;
    ++count;
    return true;
}

void ClientConnectionLimit::close(const std::string& address) {
    if (max_per_client_ == 0) return;
    std::lock_guard lock(mutex_);
    const auto found = open_.find(address);
    if (found == open_.end()) return;
    if (--found->second == 0) open_.erase(found);
}

size_t ClientConnectionLimit::open_from(const std::string& address) const {
    std::lock_guard lock(mutex_);
    const auto found = open_.find(address);
    return found == open_.end() ? 0 : found->second;
}

}  // namespace tempered::http
