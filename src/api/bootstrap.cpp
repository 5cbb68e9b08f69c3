#include "api/bootstrap.h"

#include <array>
#include <limits>

#include "api/errors.h"

namespace tempered::api {

namespace {
constexpr std::array<const char*, 3> kFields = {"bootstrap_host", "bootstrap_port", "bootstrap_room"};

// The field's entries: the scalar as one, or the array's. Empty (with no error) when absent or null.
FieldError entries_of(const Json& body, const char* name, std::vector<const Json*>& out) {
    const Json* field = find_field(body, name);
    if (!field || field->is_null()) return std::nullopt;
    if (!field->is_array()) {
        out.push_back(field);
        return std::nullopt;
    }
    if (field->empty()) return invalid_request(std::string("'") + name + "' must not be an empty array.", name);
    for (const Json& entry : *field) out.push_back(&entry);
    return std::nullopt;
}

FieldError read_host(const Json& entry, std::string& out) {
    if (!entry.is_string() || entry.get_ref<const std::string&>().empty())
        return invalid_request("'bootstrap_host' must be a host name or address.", "bootstrap_host");
    out = entry.get<std::string>();
    return std::nullopt;
}

FieldError read_port(const Json& entry, int& out) {
    if (!entry.is_number_integer() || entry.get<int64_t>() < 1 || entry.get<int64_t>() > 65535)
        return invalid_request("'bootstrap_port' must be an integer port in [1, 65535].", "bootstrap_port");
    out = static_cast<int>(entry.get<int64_t>());
    return std::nullopt;
}

FieldError read_room(const Json& entry, uint64_t& out) {
    if (entry.is_number_unsigned()) {
        out = entry.get<uint64_t>();
        return std::nullopt;
    }
    if (entry.is_number_integer() && entry.get<int64_t>() >= 0) {
        out = static_cast<uint64_t>(entry.get<int64_t>());
        return std::nullopt;
    }
    return invalid_request("'bootstrap_room' must be a non-negative integer.", "bootstrap_room");
}
}  // namespace

FieldError parse_bootstrap(const Json& body, std::optional<Bootstrap>& out) {
    std::array<std::vector<const Json*>, 3> entries;
    for (size_t i = 0; i < kFields.size(); ++i)
        if (auto e = entries_of(body, kFields[i], entries[i])) return e;
    const size_t given = !entries[0].empty() + !entries[1].empty() + !entries[2].empty();
    if (given == 0) return std::nullopt;
    for (size_t i = 0; i < kFields.size(); ++i) {
        if (entries[i].empty())
            return invalid_request(std::string("'") + kFields[i] +
                                       "' is missing: bootstrap_host, bootstrap_port and bootstrap_room go together.",
                                   kFields[i]);
        if (entries[i].size() != entries[2].size())
            return invalid_request("bootstrap_host, bootstrap_port and bootstrap_room must have the same length.",
                                   kFields[i]);
    }
    Bootstrap bootstrap;
    bootstrap.hosts.resize(entries[0].size());
    bootstrap.ports.resize(entries[0].size());
    bootstrap.rooms.resize(entries[0].size());
    for (size_t i = 0; i < entries[0].size(); ++i) {
        if (auto e = read_host(*entries[0][i], bootstrap.hosts[i])) return e;
        if (auto e = read_port(*entries[1][i], bootstrap.ports[i])) return e;
        if (auto e = read_room(*entries[2][i], bootstrap.rooms[i])) return e;
    }
    out = std::move(bootstrap);
    return std::nullopt;
}

std::optional<BootstrapTarget> Bootstrap::for_prompt(size_t prompt, size_t prompts, int n) const {
    const size_t count = rooms.size();
    size_t entry = 0;
    if (count == prompts)
        entry = prompt;
    else if (count == prompts * static_cast<size_t>(n))
        entry = prompt * static_cast<size_t>(n);
    else if (prompts != 1)
        return std::nullopt;
    return BootstrapTarget{hosts[entry], ports[entry], rooms[entry]};
}

}  // namespace tempered::api
