// The HTTP client every request to the upstream goes through (completions, chat, /v1/models, kind detection):
// its timeouts, its bearer key, and for an https upstream the certificate check (the system's CA store, or the
// one --upstream-ca-file names).
#pragma once

#include <chrono>
#include <string>

#include "http/httplib_include.h"
#include "upstream/upstream_generator.h"

namespace tempered::upstream {

httplib::Client upstream_client(const UpstreamAddress& address, const std::string& api_key,
                                std::chrono::seconds timeout);

}  // namespace tempered::upstream
