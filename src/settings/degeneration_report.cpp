#include "settings/degeneration_report.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace tempered {
namespace {

api::LoopSighting api_loop(const LoopSighting& loop) {
    return {loop.detected_at_token, loop.period, loop.repeats, loop_kind_name(loop.kind)};
}

// {"value": after, "source": "guard", "replaced": {"value": before, "source": what the request's report
// said, or "default" for a value it does not list}}.
nlohmann::json switched_value(const nlohmann::json& resolved, const std::string& name, const nlohmann::json& before,
                              const nlohmann::json& after) {
    const nlohmann::json* entry = resolved.is_object() && resolved.contains(name) ? &resolved.at(name) : nullptr;
    const bool has_source = entry && entry->is_object() && entry->contains("source");
    const nlohmann::json source = has_source ? entry->at("source") : nlohmann::json("default");
    return {{"value", after}, {"source", "guard"}, {"replaced", {{"value", before}, {"source", source}}}};
}

// The values the switch changed, by their request names.
nlohmann::json switched_sampling(const SamplingSwitch& change, const nlohmann::json& resolved) {
    nlohmann::json out = nlohmann::json::object();
    auto compare = [&](const char* name, auto before, auto after) {
        if (before != after) out[name] = switched_value(resolved, name, before, after);
    };
    auto compare_float = [&](const char* name, float before, float after) {
        if (before != after) out[name] = switched_value(resolved, name, float_for_json(before), float_for_json(after));
    };
    const SamplingParams& old_sampling = change.replaced_sampling;
    compare_float("temperature", old_sampling.temperature, change.sampling.temperature);
    compare_float("top_p", old_sampling.top_p, change.sampling.top_p);
    compare("top_k", old_sampling.top_k, change.sampling.top_k);
    compare_float("min_p", old_sampling.min_p, change.sampling.min_p);
    const DryParams& old_dry = change.replaced_dry;
    compare_float("dry_multiplier", old_dry.multiplier, change.dry.multiplier);
    compare_float("dry_base", old_dry.base, change.dry.base);
    compare("dry_allowed_length", old_dry.allowed_length, change.dry.allowed_length);
    compare("dry_penalty_last_n", old_dry.penalty_last_n, change.dry.penalty_last_n);
    return out;
}

}  // namespace

double float_for_json(float value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.6g", static_cast<double>(value));
    return std::strtod(text, nullptr);
}

api::Degeneration to_api_degeneration(const DegenerationReport& report, const nlohmann::json& resolved_sampling) {
    api::Degeneration out;
    out.loop = api_loop(report.loop);
    out.phase = degeneration_phase_name(report.phase);
    out.action = degeneration_action_name(report.action);
    if (report.resampled) out.sampling = switched_sampling(*report.resampled, resolved_sampling);
    if (report.after_resample) out.after_resample = api_loop(*report.after_resample);
    return out;
}

}  // namespace tempered
