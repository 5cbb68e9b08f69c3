// The upstream's served models (GET /v1/models): the name the front sends upstream when --upstream-model
// does not give one, and the readiness probe's question (does the upstream answer?).
#pragma once

#include <chrono>
#include <string>

#include "core/result.h"
#include "upstream/upstream_generator.h"

namespace tempered::upstream {

// The first model id the upstream lists; an error names the upstream and what went wrong.
Result<std::string> first_upstream_model(const UpstreamAddress& address, const std::string& api_key,
                                         std::chrono::seconds timeout);

}  // namespace tempered::upstream
