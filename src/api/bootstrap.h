// Prefill/decode disaggregation behind sgl-model-gateway: in its PD mode the gateway adds to every
// request body where the prefill server's KV bootstrap listens (bootstrap_host, bootstrap_port) and a
// room number the two servers meet under (bootstrap_room). Each is a scalar, or an array with one entry
// per choice when the request asks for n > 1 (SGLang expands n into a batch; tempered's n choices share
// one prefill, so they use the first entry of their prompt).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/json_fields.h"

namespace tempered::api {

struct BootstrapTarget {
    std::string host;
    int port = 0;
    uint64_t room = 0;
};

struct Bootstrap {
    std::vector<std::string> hosts;
    std::vector<int> ports;
    std::vector<uint64_t> rooms;  // the three have one length

    // The target of prompt `prompt` of `prompts`, each with `n` choices: entry `prompt` when there is one
    // entry per prompt, `prompt * n` when there is one per choice, the only one for a single prompt.
    // Nothing when the entries fit none of those.
    std::optional<BootstrapTarget> for_prompt(size_t prompt, size_t prompts, int n) const;
};

// Reads bootstrap_host, bootstrap_port and bootstrap_room: all three or none (out stays empty).
FieldError parse_bootstrap(const Json& body, std::optional<Bootstrap>& out);

}  // namespace tempered::api
