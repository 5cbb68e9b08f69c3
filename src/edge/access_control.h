// Who may call which endpoint, and what to call the caller. API keys come from --api-key (repeatable),
// --api-key-file and TEMPERED_API_KEY. With any key set, every endpoint needs `Authorization: Bearer KEY`
// except the probes a router or a monitor hits (is_probe_path), which stay open unless --protect-all:
// the list is of what stays open, so an endpoint added later is protected until someone decides otherwise.
// A request's client is its key's name, else (no keys) the value of --client-label-header, bounded by
// ClientLabels. A key may also come as `x-api-key: KEY`, as Anthropic's clients send it. Keys are never printed: errors
// name lines and flags, describe() names the keys.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/errors.h"
#include "core/result.h"
#include "edge/client_labels.h"
#include "http/http_types.h"

namespace tempered {

struct ApiKey {
    std::string name;    // the key file's NAME, else "key1", "key2", ... by the key's place among all keys
    std::string secret;  // never logged
};

// A key file's text: one key a line, `KEY` or `NAME KEY`; blank lines and `#` comments are skipped.
// Unnamed keys come back with an empty name (load_api_keys numbers them). An error names the line only.
Result<std::vector<ApiKey>> parse_api_key_file(std::string_view text);

struct ApiKeySources {
    std::vector<std::string> flag_keys;  // --api-key, in order
    std::string key_file;                // --api-key-file ("" none)
    std::string environment_key;         // TEMPERED_API_KEY ("" none)
};
// Every key, in the order flags, file, environment, each unnamed one named by its place ("key3"). An
// unreadable or malformed file, an empty key, a file with no key, or a name or key given twice is an error.
Result<std::vector<ApiKey>> load_api_keys(const ApiKeySources& sources);

// a == b in a time that does not depend on where they first differ: the longer of the two is walked to
// its end whatever the bytes are, so the time tells at most the length of the longer one.
bool secrets_equal(std::string_view a, std::string_view b);

// The endpoints a load balancer or a monitor probes, open without a key unless --protect-all:
// /health, /health_generate (one greedy token), /metrics, /get_load, /server_info, /model_info and
// SGLang's /get_server_info, /get_model_info. vLLM also protects all of /v1/*, /v1/models included.
bool is_probe_path(std::string_view path_pattern);

struct AccessSettings {
    std::vector<ApiKey> keys;  // none: every endpoint is open
    bool protect_all = false;  // --protect-all: the probes need a key too
    // --client-label-header: without keys, the header whose value names the client ("" none).
    std::string client_label_header;
    size_t max_client_labels = 32;  // --max-client-labels
};

class AccessControl {
public:
    explicit AccessControl(AccessSettings settings);

    // Whether a route registered under this pattern needs a key (decided once, at registration).
    bool requires_key(std::string_view path_pattern) const;
    // nullopt when the request presents one of the keys; else the 401 to answer. Every key is compared,
    // the matching one or not, so the time does not say which key came close.
    std::optional<api::ApiError> check(const http::HttpRequest& request) const;
    // The request's client label: its key's name, or its --client-label-header value (bounded), or
    // "unknown" without either; nullopt when this server names no clients (no keys, no header).
    std::optional<std::string> client_of(const http::HttpRequest& request) const;
    // For the start-up log: "2 API keys loaded (names: a, b) ...", never a key.
    std::string describe() const;

private:
    const ApiKey* presented_key(const http::HttpRequest& request) const;

    AccessSettings settings_;
    mutable ClientLabels labels_;  // grows as requests name new clients
};

// The 401 for a missing or wrong key, as OpenAI sends it: code invalid_api_key, WWW-Authenticate: Bearer (in
// Anthropic's envelope on the Messages API's routes).
http::HttpResponse unauthorized_response(const api::ApiError& error,
                                         api::ErrorEnvelope envelope = api::ErrorEnvelope::OpenAI);

}  // namespace tempered
