#include "disagg/prefill_allowlist.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace tempered {
namespace {

using Address = std::array<unsigned char, 16>;

// IPv6 as it is, IPv4 as IPv4-mapped IPv6 (so one comparison serves both); nullopt for a name.
std::optional<Address> parse_address(std::string_view text) {
    const std::string copy(text);
    Address bytes{};
    if (inet_pton(AF_INET6, copy.c_str(), bytes.data()) == 1) return bytes;
    unsigned char v4[4];
    if (inet_pton(AF_INET, copy.c_str(), v4) != 1) return std::nullopt;
    bytes[10] = bytes[11] = 0xff;
    std::copy(v4, v4 + 4, bytes.begin() + 12);
    return bytes;
}

bool in_network(const Address& address, const Address& network, int bits) {
    for (int bit = 0; bit < bits; ++bit) {
        const unsigned char mask = static_cast<unsigned char>(0x80u >> (bit % 8));
        if ((address[bit / 8] & mask) != (network[bit / 8] & mask)) return false;
    }
    return true;
}

std::string lowercase(std::string_view text) {
    std::string out(text);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

std::optional<int> parse_number(std::string_view text, int max) {
    int value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || value < 0 || value > max) return std::nullopt;
    return value;
}

}  // namespace

PrefillAllowlist PrefillAllowlist::loopback() {
    auto list = parse({"127.0.0.0/8", "::1", "localhost"});
    return std::move(list).value();
}

Result<PrefillAllowlist::Rule> PrefillAllowlist::parse_rule(std::string_view entry) {
    const auto bad = [&](const std::string& why) {
        return Error{"--disaggregation-allowed-prefill '" + std::string(entry) + "': " + why};
    };
    Rule rule;
    std::string_view host = entry;
    if (const size_t slash = entry.find('/'); slash != std::string_view::npos) {
        host = entry.substr(0, slash);
        rule.address = parse_address(host);
        if (!rule.address) return bad("a network needs an address before the /");
        const bool v4 = host.find(':') == std::string_view::npos;
        const auto bits = parse_number(entry.substr(slash + 1), v4 ? 32 : 128);
        if (!bits) return bad("the prefix length is out of range");
        rule.prefix_bits = *bits + (v4 ? 96 : 0);
        return rule;
    }
    if (host.starts_with('[')) {  // [IPV6]:PORT
        const size_t close = host.find(']');
        if (close == std::string_view::npos) return bad("an unclosed [");
        std::string_view rest = host.substr(close + 1);
        host = host.substr(1, close - 1);
        if (!rest.empty()) {
            if (!rest.starts_with(':')) return bad("expected :PORT after ]");
            const auto port = parse_number(rest.substr(1), 65535);
            if (!port || *port == 0) return bad("the port is out of range");
            rule.port = *port;
        }
    } else if (const size_t colon = host.rfind(':');
               colon != std::string_view::npos && host.find(':') == colon) {  // HOST:PORT (one colon: not IPv6)
        const auto port = parse_number(host.substr(colon + 1), 65535);
        if (!port || *port == 0) return bad("the port is out of range");
        rule.port = *port;
        host = host.substr(0, colon);
    }
    if (host.empty()) return bad("no host");
    rule.address = parse_address(host);
    if (!rule.address) rule.name = lowercase(host);
    return rule;
}

Result<PrefillAllowlist> PrefillAllowlist::parse(const std::vector<std::string>& entries) {
    PrefillAllowlist list;
    for (const std::string& entry : entries) {
        auto rule = parse_rule(entry);
        if (!rule) return rule.error();
        list.rules_.push_back(std::move(rule).value());
        list.entries_.push_back(entry);
    }
    return list;
}

bool PrefillAllowlist::allows(std::string_view host, int port) const {
    if (host.starts_with('[') && host.ends_with(']')) host = host.substr(1, host.size() - 2);
    const std::optional<Address> address = parse_address(host);
    const std::string name = lowercase(host);
    return std::any_of(rules_.begin(), rules_.end(), [&](const Rule& rule) {
        if (rule.port != 0 && rule.port != port) return false;
        if (rule.address) return address && in_network(*address, *rule.address, rule.prefix_bits);
        return !address && rule.name == name;
    });
}

}  // namespace tempered
