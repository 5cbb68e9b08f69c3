#include "sampling/sampling_policy.h"

#include "sampling/sampling_values.h"

namespace tempered {

Result<SamplingPolicy> parse_sampling_policy(const nlohmann::json& object, const std::string& origin) {
    if (!object.is_object()) return Error{origin + ": the sampling policy must be a JSON object"};
    SamplingPolicy policy;
    for (const auto& [name, rule] : object.items()) {
        const SamplingParamSpec* param = find_sampling_param(name);
        if (param == nullptr || !param->policy)
            return Error{origin + ": the policy names an unknown sampling parameter '" + name + "'"};
        if (!rule.is_object()) return Error{origin + ": the policy for '" + name + "' must be an object"};
        ParamBounds bounds;
        for (const auto& [key, value] : rule.items()) {
            if (key == "min" || key == "max") {
                if (!value.is_number()) return Error{origin + ": " + name + "." + key + " must be a number"};
                if (auto problem = check_sampling_range(name, value.get<double>()))
                    return Error{origin + ": " + name + "." + key + ": " + *problem};
                (key == "min" ? bounds.min : bounds.max) = value.get<double>();
            } else if (key == "greedy" && name == "temperature") {
                if (value != "use_default") return Error{origin + ": temperature.greedy must be \"use_default\""};
                policy.replace_greedy_with_default = true;
            } else {
                return Error{origin + ": unknown policy rule '" + name + "." + key + "'"};
            }
        }
        if (bounds.min && bounds.max && *bounds.min > *bounds.max)
            return Error{origin + ": " + name + ".min is greater than " + name + ".max"};
        if (bounds.min || bounds.max) policy.bounds[name] = bounds;
    }
    return policy;
}

nlohmann::json SamplingPolicy::to_json() const {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [name, bound] : bounds) {
        if (bound.min) out[name]["min"] = *bound.min;
        if (bound.max) out[name]["max"] = *bound.max;
    }
    if (replace_greedy_with_default) out["temperature"]["greedy"] = "use_default";
    return out;
}

}  // namespace tempered
