// Resolution: which value each sampling parameter of a request takes, and where it came from.
//   1. the request's explicit value (a JSON null counts as omitted);
//   2. else the operator's preferred defaults (--preferred-sampling-params);
//   3. else the model's generation config (unless --sampling-defaults openai);
//   4. else OpenAI's defaults (temperature 1, top_p 1, penalties 0) and neutral values for the rest (DRY
//      off, with llama.cpp's defaults for its other values).
// Then the operator's policy, if any, may change any value (explicit ones too); it is opt-in and every
// change it makes is reported with source "policy" and the value it replaced.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sampling/dry.h"
#include "sampling/penalties.h"
#include "sampling/sampler.h"
#include "sampling/sampling_policy.h"
#include "sampling/sampling_values.h"

namespace tempered {

enum class ParamSource { Request, Preferred, Model, Default, Policy };
std::string_view param_source_name(ParamSource source);

template <class T>
struct ResolvedValue {
    T value{};
    ParamSource source = ParamSource::Default;
    // Set when the policy changed the value: what resolution gave before it.
    std::optional<T> replaced_value;
    ParamSource replaced_source = ParamSource::Default;
};

// Each field, with its meaning and range, is a row of sampling_params.h.
struct ResolvedSampling : SamplingFields<ResolvedValue> {
    // {"temperature": {"value": 0.6, "source": "preferred"}, ...}, plus "replaced" for policy changes.
    // A group's values (DRY's) are there only when reported(group).
    nlohmann::json to_json() const;
    // Whether a value of the group (a row's `reported_with`) came from somewhere other than the defaults
    // (DRY on always does): only then are they reported and counted, so that what requests without the
    // group get stays as it was. "" (the parameters every report lists): true.
    bool reported(std::string_view group) const;
    bool dry_reported() const { return reported("dry"); }
    // Calls visit(name, source) once per reported parameter, in table order (for metrics).
    template <class Visit>
    void for_each_source(Visit&& visit) const;
    // The values as the sampler takes them (logit bias is per request and added by the caller).
    SamplingParams sampler_params() const;
    PenaltyParams penalty_params() const;
    // Without breakers: turning dry_sequence_breakers into tokens needs the vocabulary (the caller's).
    DryParams dry_params() const;
};

// How the server fills what requests leave out; built once at start-up.
struct SamplingDefaultsConfig {
    SamplingValues preferred;  // the operator's preferred values
    SamplingValues model;      // from the model's generation config (empty with --sampling-defaults openai)
    std::optional<SamplingPolicy> policy;
};

// `random_seed` is used when no layer sets a seed; the caller draws it (so this stays pure and testable).
ResolvedSampling resolve_sampling(const SamplingValues& request, const SamplingDefaultsConfig& config,
                                  uint64_t random_seed);

// The value each parameter takes when a request sets nothing, with its source: the start-up log table
// and GET /v1/models/{id}. The seed is reported as random.
nlohmann::json describe_sampling_defaults(const SamplingDefaultsConfig& config);

template <class Visit>
void ResolvedSampling::for_each_source(Visit&& visit) const {
    for_each_sampling_param([&](const auto& param) {
        if (reported(param.spec.reported_with)) visit(param.spec.name, param.field(*this).source);
    });
}

}  // namespace tempered
