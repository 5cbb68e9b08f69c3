// The server's degeneration guard (src/engine/degeneration_guard.h), from --degeneration-guard or the
// "degeneration_guard" key of the --config file (the flag wins), and how one request's
// `repetition_detection` overrides it. Either form is a bare action name ("flag", "stop", "resample",
// "off") or a JSON object:
//   {"action": "resample", "max_pattern_size": 128, "min_pattern_size": 1, "min_count": 3,
//    "min_loop_tokens": 24, "min_loop_share": 0.2, "shapes": true, "fallback": {"temperature": 0.7, "top_p": ..,
//    "top_k": .., "min_p": .., "dry_multiplier": 0.8, "dry_base": 1.75, "dry_allowed_length": 2, "dry_penalty_last_n":
//    -1, "dry_sequence_breakers": []}}
// where every key is optional and defaults to default_degeneration_guard()'s value.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "engine/degeneration_guard.h"
#include "sampling/dry_breakers.h"
#include "tokenizer/tokenizer.h"

namespace tempered {

struct DegenerationGuardSettings {
    // fallback.dry.breakers and shapes: set by build_vocabulary_tables
    DegenerationGuard guard = default_degeneration_guard();
    std::vector<std::string> dry_sequence_breakers = kFallbackDryBreakers;

    // Once, at start-up: the vocabulary's shapes for the loop channels, and the fallback's breaker strings as
    // tokens of `tokenizer`.
    void build_vocabulary_tables(const Tokenizer& tokenizer);
    // For the start-up log and /server_info.
    nlohmann::json describe() const;
};

// `value`: a JSON string (an action name) or object. `where` begins every error ("--degeneration-guard",
// "--config: degeneration_guard"), followed by the offending key.
Result<DegenerationGuardSettings> parse_degeneration_guard(const nlohmann::json& value, const std::string& where);

// The flag's text (an action name, or a JSON object) if given, else the config file's value if any, else
// the default.
Result<DegenerationGuardSettings> choose_degeneration_guard(const std::string& flag,
                                                            const std::optional<nlohmann::json>& config_value);

// The guard one request runs under: the server's, unless the request sent repetition_detection; then its
// thresholds with action stop (vLLM's behaviour; max_pattern_size 0 turns detection off for the request).
DegenerationGuard guard_for_request(const DegenerationGuard& server,
                                    const std::optional<RepetitionDetectionParams>& repetition_detection);

}  // namespace tempered
