// Which prefill servers a decode server may fetch KV from (--disaggregation-allowed-prefill): the bootstrap
// target comes in the request body, so without a list anyone who may send a request could make the decode
// server open connections to any host and port. Entries: HOST (any port), HOST:PORT, [IPV6]:PORT, or a network
// ADDRESS/BITS (e.g. a cluster's pod network, where the gateway names prefill pods by IP). Addresses compare as
// addresses (127.0.0.1 is in 127.0.0.0/8, ::1 equals 0:0:0:0:0:0:0:1); names compare as text, case-insensitively,
// and are never resolved: a target is refused before any connection or lookup. The default is loopback only.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace tempered {

class PrefillAllowlist {
public:
    // 127.0.0.0/8, ::1 and localhost.
    static PrefillAllowlist loopback();
    // Every entry checked; an error names the entry.
    static Result<PrefillAllowlist> parse(const std::vector<std::string>& entries);

    bool allows(std::string_view host, int port) const;
    const std::vector<std::string>& entries() const { return entries_; }  // as given, for /server_info

private:
    struct Rule {
        std::optional<std::array<unsigned char, 16>> address;  // an address or network (IPv4 as IPv4-mapped)
        int prefix_bits = 128;
        std::string name;  // a host name (lowercase) when not an address
        int port = 0;      // 0: any
    };
    static Result<Rule> parse_rule(std::string_view entry);

    std::vector<Rule> rules_;
    std::vector<std::string> entries_;
};

}  // namespace tempered
