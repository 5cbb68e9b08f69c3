// ClientConnectionLimit: how many connections each client address holds open, and whether it may open
// another (--max-connections-per-client). One client opening hundreds of connections would otherwise take
// every thread of the pool (one per open connection) from everyone else. Counted by remote IP, so clients
// behind one proxy or router share a count: off (0) unless the operator asks for it.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>

namespace tempered::http {

class ClientConnectionLimit {
public:
    explicit ClientConnectionLimit(size_t max_per_client) : max_per_client_(max_per_client) {}

    // Counts a new connection from `address`; false (and nothing counted) when the address already holds
    // the maximum. Always true when the limit is off.
    bool try_open(const std::string& address);
    // A connection try_open counted has closed.
    void close(const std::string& address);

    size_t open_from(const std::string& address) const;
    size_t max_per_client() const { return max_per_client_; }

private:
    const size_t max_per_client_;  // 0: no limit
    mutable std::mutex mutex_;
    std::unordered_map<std::string, size_t> open_;  // only addresses with a connection open
};

}  // namespace tempered::http
