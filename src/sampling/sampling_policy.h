// The operator's opt-in sampling policy, applied after resolution to every value, explicit ones too.
// JSON form (--sampling-policy or the config file):
//   {"temperature": {"min": 0.3, "max": 1.5, "greedy": "use_default"}, "top_p": {"min": 0.8}}
// "min"/"max" clamp a numeric parameter (DRY's too: {"dry_multiplier": {"min": 0.8}} turns DRY on for
// every request); "greedy": "use_default" (temperature only) replaces a temperature of 0
// with the value the request would have had without its own temperature (preferred, model or default).
#pragma once

#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace tempered {

struct ParamBounds {
    std::optional<double> min;
    std::optional<double> max;
};

struct SamplingPolicy {
    std::map<std::string, ParamBounds> bounds;  // by parameter name
    bool replace_greedy_with_default = false;

    nlohmann::json to_json() const;
};

Result<SamplingPolicy> parse_sampling_policy(const nlohmann::json& object, const std::string& origin);

}  // namespace tempered
