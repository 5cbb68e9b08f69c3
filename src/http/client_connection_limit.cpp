#include "http/client_connection_limit.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>

namespace tempered::http {

std::string client_key(const std::string& address, int ipv6_prefix) {
    std::array<unsigned char, 16> bytes{};
    if (inet_pton(AF_INET6, address.c_str(), bytes.data()) != 1) return address;
    constexpr std::array<unsigned char, 12> kMapped = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::equal(kMapped.begin(), kMapped.end(), bytes.begin())) {
        char text[INET_ADDRSTRLEN];
        if (inet_ntop(AF_INET, bytes.data() + 12, text, sizeof(text)) != nullptr) return text;
    }
    const int prefix = std::clamp(ipv6_prefix, 0, 128);
    for (int bit = prefix; bit < 128; ++bit) bytes[bit / 8] &= static_cast<unsigned char>(~(0x80u >> (bit % 8)));
    char text[INET6_ADDRSTRLEN];
    if (inet_ntop(AF_INET6, bytes.data(), text, sizeof(text)) == nullptr) return address;
    return std::string(text) + "/" + std::to_string(prefix);
}

bool ClientConnectionLimit::try_open(const std::string& address) {
    if (max_per_client_ == 0) return true;
    std::lock_guard lock(mutex_);
    size_t& count = open_[client_key(address, ipv6_prefix_)];
    if (count >= max_per_client_) return false;
    ++count;
    return true;
}

void ClientConnectionLimit::close(const std::string& address) {
    if (max_per_client_ == 0) return;
    std::lock_guard lock(mutex_);
    const auto found = open_.find(client_key(address, ipv6_prefix_));
    if (found == open_.end()) return;
    if (--found->second == 0) open_.erase(found);
}

size_t ClientConnectionLimit::open_from(const std::string& address) const {
    std::lock_guard lock(mutex_);
    const auto found = open_.find(client_key(address, ipv6_prefix_));
    return found == open_.end() ? 0 : found->second;
}

}  // namespace tempered::http
