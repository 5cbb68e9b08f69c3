// `repetition_detection` (chat and completions), vLLM's per-request loop detection:
// {"max_pattern_size": 8, "min_pattern_size": 1, "min_count": 3}. Parsed and checked here; the detector
// itself is src/output/repetition_detector.h, and what a detection does is the server's business.
#pragma once

#include <optional>

#include "api/errors.h"
#include "api/json_fields.h"
#include "output/repetition_detector.h"

namespace tempered::api {

// `field` is body["repetition_detection"] or nullptr; absent or null leaves `out` empty (the server's
// own guard applies). A non-object, an unknown key, a non-integer or a value the detector rejects is a
// 400 that names "repetition_detection.<key>".
FieldError parse_repetition_detection(const Json* field, std::optional<RepetitionDetectionParams>& out);

}  // namespace tempered::api
