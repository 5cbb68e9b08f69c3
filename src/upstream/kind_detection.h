// --upstream-kind auto: which engine answers at the upstream URL, asked of each engine's own info endpoint,
// in this order: tempered's /server_info (it reports a degeneration guard), llama-server's /props (its
// default_generation_settings), vLLM's /version, SGLang's /get_server_info; anything else is taken for a
// plain OpenAI-compatible API (the smallest capability table).
#pragma once

#include <chrono>
#include <string>

#include "upstream/upstream_generator.h"
#include "upstream/upstream_kind.h"

namespace tempered::upstream {

UpstreamKind detect_upstream_kind(const UpstreamAddress& address, const std::string& api_key,
                                  std::chrono::seconds timeout);

}  // namespace tempered::upstream
