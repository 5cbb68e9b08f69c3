#include "sampling/sampling_resolution.h"

#include <algorithm>
#include <type_traits>

namespace tempered {
namespace {

template <class T>
ResolvedValue<T> first_set(const std::optional<T>& request, const std::optional<T>& preferred,
                           const std::optional<T>& model, T fallback) {
    if (request) return {*request, ParamSource::Request, {}, {}};
    if (preferred) return {*preferred, ParamSource::Preferred, {}, {}};
    if (model) return {*model, ParamSource::Model, {}, {}};
    return {fallback, ParamSource::Default, {}, {}};
}

// The value a parameter takes when no layer sets it: OpenAI's default where it has one, else the row's
// value that changes nothing.
template <class Param>
typename Param::Value table_default(const Param& param) {
    using Value = typename Param::Value;
    if constexpr (std::is_arithmetic_v<Value>)
        return static_cast<Value>(param.spec.default_value);
    else
        return param.spec.default_list();
}

template <class T>
void replace_by_policy(ResolvedValue<T>& resolved, T value) {
    if (resolved.value == value) return;
    if (!resolved.replaced_value) {
        resolved.replaced_value = resolved.value;
        resolved.replaced_source = resolved.source;
    }
    resolved.value = value;
    resolved.source = ParamSource::Policy;
}

template <class T>
void clamp_by_policy(const SamplingPolicy& policy, std::string_view name, ResolvedValue<T>& resolved) {
    if constexpr (std::is_arithmetic_v<T>) {
        auto rule = policy.bounds.find(std::string(name));
        if (rule == policy.bounds.end()) return;
        double value = static_cast<double>(resolved.value);
        if (rule->second.min) value = std::max(value, *rule->second.min);
        if (rule->second.max) value = std::min(value, *rule->second.max);
        replace_by_policy(resolved, static_cast<T>(value));
    }
}

template <class T>
nlohmann::json value_json(const ResolvedValue<T>& resolved) {
    nlohmann::json out = {{"value", resolved.value}, {"source", param_source_name(resolved.source)}};
    if (resolved.replaced_value)
        out["replaced"] = {{"value", *resolved.replaced_value},
                           {"source", param_source_name(resolved.replaced_source)}};
    return out;
}

void apply_policy(const SamplingPolicy& policy, const SamplingDefaultsConfig& config, ResolvedSampling& out) {
    if (policy.replace_greedy_with_default && out.temperature.value == 0.0 &&
        out.temperature.source == ParamSource::Request) {
        // What the request would have got had it not sent a temperature.
        const double fallback = find_sampling_param("temperature")->default_value;
        const auto without_request =
            first_set<double>(std::nullopt, config.preferred.temperature, config.model.temperature, fallback);
        replace_by_policy(out.temperature, without_request.value);
    }
    for_each_sampling_param([&](const auto& param) {
        if (param.spec.policy) clamp_by_policy(policy, param.spec.name, param.field(out));
    });
}

}  // namespace

std::string_view param_source_name(ParamSource source) {
    switch (source) {
        case ParamSource::Request: return "request";
        case ParamSource::Preferred: return "preferred";
        case ParamSource::Model: return "model";
        case ParamSource::Default: return "default";
        case ParamSource::Policy: return "policy";
    }
    return "default";
}

ResolvedSampling resolve_sampling(const SamplingValues& request, const SamplingDefaultsConfig& config,
                                  uint64_t random_seed) {
    ResolvedSampling out;
    for_each_sampling_param([&](const auto& param) {
        param.field(out) = first_set(param.field(request), param.field(config.preferred), param.field(config.model),
                                     table_default(param));
    });
    if (out.seed.source == ParamSource::Default)
        out.seed.value = static_cast<int64_t>(random_seed >> 33);  // 31 bits: exact in every JSON client
    if (config.policy) apply_policy(*config.policy, config, out);
    return out;
}

nlohmann::json ResolvedSampling::to_json() const {
    nlohmann::json out = nlohmann::json::object();
    for_each_sampling_param([&](const auto& param) {
        if (reported(param.spec.reported_with)) out[std::string(param.spec.name)] = value_json(param.field(*this));
    });
    return out;
}

bool ResolvedSampling::reported(std::string_view group) const {
    if (group.empty()) return true;
    bool set = false;
    for_each_sampling_param([&](const auto& param) {
        if (param.spec.reported_with == group) set = set || param.field(*this).source != ParamSource::Default;
    });
    return set;
}

SamplingParams ResolvedSampling::sampler_params() const {
    SamplingParams params;
    params.temperature = static_cast<float>(temperature.value);
    params.top_p = static_cast<float>(top_p.value);
    params.top_k = static_cast<int32_t>(top_k.value);
    params.min_p = static_cast<float>(min_p.value);
    params.typical_p = static_cast<float>(typical_p.value);
    return params;
}

PenaltyParams ResolvedSampling::penalty_params() const {
    return {static_cast<float>(repetition_penalty.value), static_cast<float>(presence_penalty.value),
            static_cast<float>(frequency_penalty.value)};
}

DryParams ResolvedSampling::dry_params() const {
    DryParams params;
    params.multiplier = static_cast<float>(dry_multiplier.value);
    params.base = static_cast<float>(dry_base.value);
    params.allowed_length = static_cast<int32_t>(dry_allowed_length.value);
    params.penalty_last_n = static_cast<int32_t>(dry_penalty_last_n.value);
    return params;
}

nlohmann::json describe_sampling_defaults(const SamplingDefaultsConfig& config) {
    ResolvedSampling defaults = resolve_sampling(SamplingValues{}, config, 0);
    nlohmann::json table = defaults.to_json();
    if (defaults.seed.source == ParamSource::Default) table["seed"] = {{"value", "random"}, {"source", "default"}};
    return table;
}

}  // namespace tempered
