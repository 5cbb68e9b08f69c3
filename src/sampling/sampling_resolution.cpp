#include "sampling/sampling_resolution.h"

#include <algorithm>

namespace tempered {
namespace {

// OpenAI's defaults where it has them; neutral values (no effect) for the rest.
constexpr double kDefaultTemperature = 1.0;
constexpr double kDefaultTopP = 1.0;
constexpr int64_t kDefaultTopK = 0;
constexpr double kDefaultMinP = 0.0;
constexpr double kDefaultRepetitionPenalty = 1.0;
constexpr double kDefaultPresencePenalty = 0.0;
constexpr double kDefaultFrequencyPenalty = 0.0;
// DRY: off, and llama.cpp's values for the rest (so turning it on with only a multiplier behaves as there).
// penalty_last_n -1 rather than llama.cpp's 0: see dry.h.
const DryParams kDefaultDry;
const std::vector<std::string> kDefaultDryBreakers = {"\n", ":", "\"", "*"};

template <class T>
ResolvedValue<T> first_set(const std::optional<T>& request, const std::optional<T>& preferred,
                           const std::optional<T>& model, T fallback) {
    if (request) return {*request, ParamSource::Request, {}, {}};
    if (preferred) return {*preferred, ParamSource::Preferred, {}, {}};
    if (model) return {*model, ParamSource::Model, {}, {}};
    return {fallback, ParamSource::Default, {}, {}};
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
void clamp_by_policy(const SamplingPolicy& policy, const char* name, ResolvedValue<T>& resolved) {
    auto rule = policy.bounds.find(name);
    if (rule == policy.bounds.end()) return;
    double value = static_cast<double>(resolved.value);
    if (rule->second.min) value = std::max(value, *rule->second.min);
    if (rule->second.max) value = std::min(value, *rule->second.max);
    replace_by_policy(resolved, static_cast<T>(value));
}

template <class T>
nlohmann::json value_json(const ResolvedValue<T>& resolved) {
    nlohmann::json out = {{"value", resolved.value}, {"source", param_source_name(resolved.source)}};
    if (resolved.replaced_value)
        out["replaced"] = {{"value", *resolved.replaced_value},
                           {"source", param_source_name(resolved.replaced_source)}};
    return out;
}

void resolve_dry(const SamplingValues& request, const SamplingDefaultsConfig& config, ResolvedSampling& out) {
    const SamplingValues& preferred = config.preferred;
    const SamplingValues& model = config.model;
    out.dry_multiplier = first_set(request.dry_multiplier, preferred.dry_multiplier, model.dry_multiplier,
                                   static_cast<double>(kDefaultDry.multiplier));
    out.dry_base =
        first_set(request.dry_base, preferred.dry_base, model.dry_base, static_cast<double>(kDefaultDry.base));
    out.dry_allowed_length = first_set(request.dry_allowed_length, preferred.dry_allowed_length,
                                       model.dry_allowed_length, static_cast<int64_t>(kDefaultDry.allowed_length));
    out.dry_penalty_last_n = first_set(request.dry_penalty_last_n, preferred.dry_penalty_last_n,
                                       model.dry_penalty_last_n, static_cast<int64_t>(kDefaultDry.penalty_last_n));
    out.dry_sequence_breakers = first_set(request.dry_sequence_breakers, preferred.dry_sequence_breakers,
                                          model.dry_sequence_breakers, kDefaultDryBreakers);
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
    const SamplingValues& preferred = config.preferred;
    const SamplingValues& model = config.model;
    ResolvedSampling out;
    out.temperature = first_set(request.temperature, preferred.temperature, model.temperature, kDefaultTemperature);
    out.top_p = first_set(request.top_p, preferred.top_p, model.top_p, kDefaultTopP);
    out.top_k = first_set(request.top_k, preferred.top_k, model.top_k, kDefaultTopK);
    out.min_p = first_set(request.min_p, preferred.min_p, model.min_p, kDefaultMinP);
    out.repetition_penalty = first_set(request.repetition_penalty, preferred.repetition_penalty,
                                       model.repetition_penalty, kDefaultRepetitionPenalty);
    out.presence_penalty = first_set(request.presence_penalty, preferred.presence_penalty, model.presence_penalty,
                                     kDefaultPresencePenalty);
    out.frequency_penalty = first_set(request.frequency_penalty, preferred.frequency_penalty, model.frequency_penalty,
                                      kDefaultFrequencyPenalty);
    out.seed = first_set(request.seed, preferred.seed, model.seed,
                         static_cast<int64_t>(random_seed >> 33));  // 31 bits: exact in every JSON client
    resolve_dry(request, config, out);

    if (!config.policy) return out;
    const SamplingPolicy& policy = *config.policy;
    if (policy.replace_greedy_with_default && out.temperature.value == 0.0 &&
        out.temperature.source == ParamSource::Request) {
        // What the request would have got had it not sent a temperature.
        const auto without_request =
            first_set<double>(std::nullopt, preferred.temperature, model.temperature, kDefaultTemperature);
        replace_by_policy(out.temperature, without_request.value);
    }
    clamp_by_policy(policy, "temperature", out.temperature);
    clamp_by_policy(policy, "top_p", out.top_p);
    clamp_by_policy(policy, "top_k", out.top_k);
    clamp_by_policy(policy, "min_p", out.min_p);
    clamp_by_policy(policy, "repetition_penalty", out.repetition_penalty);
    clamp_by_policy(policy, "presence_penalty", out.presence_penalty);
    clamp_by_policy(policy, "frequency_penalty", out.frequency_penalty);
    clamp_by_policy(policy, "dry_multiplier", out.dry_multiplier);
    clamp_by_policy(policy, "dry_base", out.dry_base);
    clamp_by_policy(policy, "dry_allowed_length", out.dry_allowed_length);
    clamp_by_policy(policy, "dry_penalty_last_n", out.dry_penalty_last_n);
    return out;
}

nlohmann::json ResolvedSampling::to_json() const {
    nlohmann::json out = {{"temperature", value_json(temperature)},
                          {"top_p", value_json(top_p)},
                          {"top_k", value_json(top_k)},
                          {"min_p", value_json(min_p)},
                          {"repetition_penalty", value_json(repetition_penalty)},
                          {"presence_penalty", value_json(presence_penalty)},
                          {"frequency_penalty", value_json(frequency_penalty)},
                          {"seed", value_json(seed)}};
    if (!dry_reported()) return out;
    out["dry_multiplier"] = value_json(dry_multiplier);
    out["dry_base"] = value_json(dry_base);
    out["dry_allowed_length"] = value_json(dry_allowed_length);
    out["dry_penalty_last_n"] = value_json(dry_penalty_last_n);
    out["dry_sequence_breakers"] = value_json(dry_sequence_breakers);
    return out;
}

bool ResolvedSampling::dry_reported() const {
    for (ParamSource source : {dry_multiplier.source, dry_base.source, dry_allowed_length.source,
                               dry_penalty_last_n.source, dry_sequence_breakers.source}) {
        if (source != ParamSource::Default) return true;
    }
    return false;
}

SamplingParams ResolvedSampling::sampler_params() const {
    SamplingParams params;
    params.temperature = static_cast<float>(temperature.value);
    params.top_p = static_cast<float>(top_p.value);
    params.top_k = static_cast<int32_t>(top_k.value);
    params.min_p = static_cast<float>(min_p.value);
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
