// The one table of sampling parameters. Every reader and writer of sampling values goes through it: the
// request parser (api/), the operator's preferred values and policy (flags, config file), the model's
// generation config (generation_config.json, GGUF general.sampling.*), resolution, the `sampling` report
// and the metrics. A new parameter is a field in SamplingFields, a row in kSamplingParams, and its
// sampler stage.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace tempered {

// One field per parameter, in the holder each layer needs: std::optional for a layer's values
// (SamplingValues), api::RequestedValue for a request, ResolvedValue for the resolved set.
template <template <class> class Slot>
struct SamplingFields {
    Slot<double> temperature;
    Slot<double> top_p;
    Slot<int64_t> top_k;
    Slot<double> min_p;
    Slot<double> presence_penalty;
    Slot<double> frequency_penalty;
    Slot<double> repetition_penalty;
    Slot<int64_t> seed;
    Slot<double> dry_multiplier;
    Slot<double> dry_base;
    Slot<int64_t> dry_allowed_length;
    Slot<int64_t> dry_penalty_last_n;
    Slot<std::vector<std::string>> dry_sequence_breakers;
    Slot<double> typical_p;
};

enum class ParamType { Number, Integer, Strings };

// The legal values. Requests are told the interval itself ("expected a number in (0, 1]"); the
// operator's sources are told `SamplingParamSpec::range_error`.
struct ParamRange {
    double min = -std::numeric_limits<double>::infinity();
    double max = std::numeric_limits<double>::infinity();
    bool min_exclusive = false;
    bool max_exclusive = false;
    bool integral = false;  // the operator's range check refuses fractions too (its text says "integer")

    constexpr bool contains(double value) const {
        if (value != value) return false;  // NaN
        if (min_exclusive ? value <= min : value < min) return false;
        if (max_exclusive ? value >= max : value > max) return false;
        return true;
    }
};

struct SamplingParamSpec {
    std::string_view name{};  // the JSON key everywhere: requests, flags, config file, report, metrics
    ParamType type = ParamType::Number;
    ParamRange range{};
    std::string_view range_error{};  // after the name: "temperature must be in [0, 2]"
    double default_value = 0;        // OpenAI's default where it has one, else the value that changes nothing
    // "": always in the `sampling` report and the metrics. Else the parameter's group ("dry"), reported
    // only once something other than the defaults sets one of its members, so that responses that do
    // not use it stay as they were before the group existed.
    std::string_view reported_with{};
    bool policy = true;                        // whether --sampling-policy may bound it
    std::string_view generation_config_key{};  // its key in generation_config.json; "" none
    std::string_view gguf_key{};               // its GGUF key; "" none (llama.cpp defines general.sampling.*)
    bool negative_means_zero = false;          // top_k: -1 and 0 both mean "off"
    std::vector<std::string> (*default_list)() = nullptr;  // a Strings parameter's default
};

// A row: the spec, the C++ type of its values, and the field that holds it in any SamplingFields.
template <class T, class Field>
struct SamplingParam {
    using Value = T;
    SamplingParamSpec spec;
    Field field;  // [](auto& fields) -> auto& { return fields.<name>; }
};

template <class T, class Field>
constexpr SamplingParam<T, Field> sampling_param(SamplingParamSpec spec, Field field) {
    return {spec, field};
}

std::vector<std::string> default_dry_sequence_breakers();  // llama.cpp's: "\n", ":", "\"", "*"

namespace sampling_table {
inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr double kInt32Max = std::numeric_limits<int32_t>::max();
using enum ParamType;
}  // namespace sampling_table

// In the order requests are validated (the first bad field is the one a 400 names).
// DRY: llama.cpp's names and meanings (sampling/dry.h); its bounds are llama-server's where it has them,
// plus -1 for "the whole history"; a base below 1 is refused rather than silently turning DRY off.
inline constexpr auto kSamplingParams = [] {
    using namespace sampling_table;
    return std::tuple{
        sampling_param<double>(
            {.name = "temperature",
             .range = {.min = 0, .max = 2},
             .range_error = "must be in [0, 2]",
             .default_value = 1.0,
             .generation_config_key = "temperature",
             .gguf_key = "general.sampling.temp"},
            [](auto& f) -> auto& { return f.temperature; }),
        sampling_param<double>(
            {.name = "top_p",
             .range = {.min = 0, .max = 1, .min_exclusive = true},
             .range_error = "must be in (0, 1]",
             .default_value = 1.0,
             .generation_config_key = "top_p",
             .gguf_key = "general.sampling.top_p"},
            [](auto& f) -> auto& { return f.top_p; }),
        sampling_param<int64_t>(
            {.name = "top_k",
             .type = Integer,
             .range = {.min = -1},
             .range_error = "must be >= 1, or 0 or -1 for no top-k",
             .default_value = 0,
             .generation_config_key = "top_k",
             .gguf_key = "general.sampling.top_k",
             .negative_means_zero = true},
            [](auto& f) -> auto& { return f.top_k; }),
        sampling_param<double>(
            {.name = "min_p",
             .range = {.min = 0, .max = 1},
             .range_error = "must be in [0, 1]",
             .default_value = 0.0,
             .generation_config_key = "min_p",
             .gguf_key = "general.sampling.min_p"},
            [](auto& f) -> auto& { return f.min_p; }),
        sampling_param<double>(
            {.name = "presence_penalty",
             .range = {.min = -2, .max = 2},
             .range_error = "must be in [-2, 2]",
             .default_value = 0.0},
            [](auto& f) -> auto& { return f.presence_penalty; }),
        sampling_param<double>(
            {.name = "frequency_penalty",
             .range = {.min = -2, .max = 2},
             .range_error = "must be in [-2, 2]",
             .default_value = 0.0},
            [](auto& f) -> auto& { return f.frequency_penalty; }),
        sampling_param<double>(
            {.name = "repetition_penalty",
             .range = {.min = 0, .max = 2, .min_exclusive = true},
             .range_error = "must be in (0, 2]",
             .default_value = 1.0,
             .generation_config_key = "repetition_penalty",
             .gguf_key = "general.sampling.penalty_repeat"},
            [](auto& f) -> auto& { return f.repetition_penalty; }),
        // Its default is a fresh random seed per request, which resolution draws.
        sampling_param<int64_t>(
            {.name = "seed", .type = Integer, .policy = false}, [](auto& f) -> auto& { return f.seed; }),
        sampling_param<double>(
            {.name = "dry_multiplier",
             .range = {.min = 0, .max = kInf, .max_exclusive = true},
             .range_error = "must be >= 0 (0 turns DRY off)",
             .default_value = 0.0,
             .reported_with = "dry"},
            [](auto& f) -> auto& { return f.dry_multiplier; }),
        sampling_param<double>(
            {.name = "dry_base",
             .range = {.min = 1, .max = kInf, .max_exclusive = true},
             .range_error = "must be >= 1",
             .default_value = 1.75,
             .reported_with = "dry"},
            [](auto& f) -> auto& { return f.dry_base; }),
        sampling_param<int64_t>(
            {.name = "dry_allowed_length",
             .type = Integer,
             .range = {.min = 0, .max = kInt32Max, .integral = true},
             .range_error = "must be an integer in [0, 2147483647]",
             .default_value = 2,
             .reported_with = "dry"},
            [](auto& f) -> auto& { return f.dry_allowed_length; }),
        // -1 rather than llama.cpp's 0 by default: see dry.h.
        sampling_param<int64_t>(
            {.name = "dry_penalty_last_n",
             .type = Integer,
             .range = {.min = -1, .max = kInt32Max, .integral = true},
             .range_error = "must be an integer in [-1, 2147483647] (-1: the whole history, 0: off)",
             .default_value = -1,
             .reported_with = "dry"},
            [](auto& f) -> auto& { return f.dry_penalty_last_n; }),
        sampling_param<std::vector<std::string>>(
            {.name = "dry_sequence_breakers",
             .type = Strings,
             .reported_with = "dry",
             .policy = false,
             .default_list = default_dry_sequence_breakers},
            [](auto& f) -> auto& { return f.dry_sequence_breakers; }),
        // Locally typical sampling (llama.cpp's typical_p, Hugging Face's generation_config key); 1: off.
        // GGUF has no key for it (llama.cpp's general.sampling.* list none).
        sampling_param<double>(
            {.name = "typical_p",
             .range = {.min = 0, .max = 1, .min_exclusive = true},
             .range_error = "must be in (0, 1] (1 turns it off)",
             .default_value = 1.0,
             .reported_with = "typical_p",
             .generation_config_key = "typical_p"},
            [](auto& f) -> auto& { return f.typical_p; }),
    };
}();

// Calls visit(row) for each row of kSamplingParams, in order.
template <class Visit>
constexpr void for_each_sampling_param(Visit&& visit) {
    std::apply([&](const auto&... row) { (visit(row), ...); }, kSamplingParams);
}

// The row named `name`, or null.
const SamplingParamSpec* find_sampling_param(std::string_view name);

// The parameters every report lists, in table order (the seed among them).
inline constexpr auto kSamplingParamNames = [] {
    constexpr size_t count = [] {
        size_t n = 0;
        for_each_sampling_param([&](const auto& row) { n += row.spec.reported_with.empty(); });
        return n;
    }();
    std::array<std::string_view, count> names{};
    size_t i = 0;
    for_each_sampling_param([&](const auto& row) {
        if (row.spec.reported_with.empty()) names[i++] = row.spec.name;
    });
    return names;
}();

// DRY's numeric parameters. `dry_sequence_breakers` (a list, not a number) is reported with them.
inline constexpr auto kDrySamplingParamNames = [] {
    constexpr size_t count = [] {
        size_t n = 0;
        for_each_sampling_param(
            [&](const auto& row) { n += row.spec.reported_with == "dry" && row.spec.type != ParamType::Strings; });
        return n;
    }();
    std::array<std::string_view, count> names{};
    size_t i = 0;
    for_each_sampling_param([&](const auto& row) {
        if (row.spec.reported_with == "dry" && row.spec.type != ParamType::Strings) names[i++] = row.spec.name;
    });
    return names;
}();

}  // namespace tempered
