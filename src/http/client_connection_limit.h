// ClientConnectionLimit: how many connections each client address holds open, and whether it may open
// another (--max-connections-per-client). One client opening hundreds of connections would otherwise take
// every thread of the pool (one per open connection) from everyone else. Counted by remote IP, so clients
// behind one proxy or router share a count: off (0) unless the operator asks for it. An IPv6 client is
// counted by its network prefix (/64 by default, --client-ipv6-prefix): a host is given a whole /64 and can
// rotate through it, so one count per address would be no limit at all.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>

namespace tempered::http {

// The address a client is counted under: IPv4 as it is (an IPv4-mapped IPv6 address as its IPv4 one), IPv6 as
// its first `ipv6_prefix` bits ("2001:db8:1:2::/64"); anything unparsable as it came.
std::string client_key(const std::string& address, int ipv6_prefix);

class ClientConnectionLimit {
public:
    explicit ClientConnectionLimit(size_t max_per_client, int ipv6_prefix = 64)
        : max_per_client_(max_per_client), ipv6_prefix_(ipv6_prefix) {}

    // Counts a new connection from `address`; false (and nothing counted) when the address already holds
    // the maximum. Always true when the limit is off.
    bool try_open(const std::string& address);
    // A connection try_open counted has closed.
    void close(const std::string& address);

    size_t open_from(const std::string& address) const;
    size_t max_per_client() const { return max_per_client_; }

private:
    const size_t max_per_client_;  // 0: no limit
    const int ipv6_prefix_;
    mutable std::mutex mutex_;
    std::unordered_map<std::string, size_t> open_;  // by client_key, only those with a connection open
};

}  // namespace tempered::http
