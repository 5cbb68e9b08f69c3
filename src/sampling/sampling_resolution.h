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

struct ResolvedSampling {
    ResolvedValue<double> temperature;
    ResolvedValue<double> top_p;
    ResolvedValue<int64_t> top_k;
    ResolvedValue<double> min_p;
    ResolvedValue<double> repetition_penalty;
    ResolvedValue<double> presence_penalty;
    ResolvedValue<double> frequency_penalty;
    ResolvedValue<int64_t> seed;  // a fresh random seed (source "default") when nobody set one
    ResolvedValue<double> dry_multiplier;
    ResolvedValue<double> dry_base;
    ResolvedValue<int64_t> dry_allowed_length;
    ResolvedValue<int64_t> dry_penalty_last_n;
    ResolvedValue<std::vector<std::string>> dry_sequence_breakers;

    // {"temperature": {"value": 0.6, "source": "preferred"}, ...}, plus "replaced" for policy changes.
    // The DRY values are there only when dry_reported().
    nlohmann::json to_json() const;
    // Whether any DRY value came from somewhere other than the defaults (DRY on always does): only then
    // are they reported and counted, so that what requests without DRY get stays as it was.
    bool dry_reported() const;
    // Calls visit(name, source) once per parameter, in kSamplingParamNames order with the DRY ones
    // (when reported) before the seed (for metrics).
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
    visit("temperature", temperature.source);
    visit("top_p", top_p.source);
    visit("top_k", top_k.source);
    visit("min_p", min_p.source);
    visit("repetition_penalty", repetition_penalty.source);
    visit("presence_penalty", presence_penalty.source);
    visit("frequency_penalty", frequency_penalty.source);
    if (dry_reported()) {
        visit("dry_multiplier", dry_multiplier.source);
        visit("dry_base", dry_base.source);
        visit("dry_allowed_length", dry_allowed_length.source);
        visit("dry_penalty_last_n", dry_penalty_last_n.source);
        visit("dry_sequence_breakers", dry_sequence_breakers.source);
    }
    visit("seed", seed.source);
}

}  // namespace tempered
