#include "sampling/sampling_values.h"

#include <cmath>
#include <type_traits>

namespace tempered {

bool SamplingValues::empty() const {
    bool empty = true;
    for_each_sampling_param([&](const auto& param) { empty = empty && !param.field(*this); });
    return empty;
}

std::vector<std::string> default_dry_sequence_breakers() { return {"\n", ":", "\"", "*"}; }

const SamplingParamSpec* find_sampling_param(std::string_view name) {
    const SamplingParamSpec* found = nullptr;
    for_each_sampling_param([&](const auto& param) {
        if (param.spec.name == name) found = &param.spec;
    });
    return found;
}

std::optional<std::string> check_sampling_range(std::string_view name, double value) {
    const std::string key(name);
    if (!std::isfinite(value)) return key + " must be a finite number";
    const SamplingParamSpec* spec = find_sampling_param(name);
    if (spec == nullptr || spec->type == ParamType::Strings) return std::nullopt;
    const bool integral = std::floor(value) == value;
    if (!spec->range.contains(value) || (spec->range.integral && !integral))
        return key + " " + std::string(spec->range_error);
    return std::nullopt;
}

std::optional<std::string> check_dry_sequence_breakers(const nlohmann::json& value) {
    const std::string key = "dry_sequence_breakers";
    if (!value.is_array() || value.empty()) return key + " must be a non-empty array of strings";
    if (value.size() > kMaxDrySequenceBreakers)
        return key + " must have at most " + std::to_string(kMaxDrySequenceBreakers) + " strings";
    for (size_t i = 0; i < value.size(); ++i) {
        const std::string item = key + "[" + std::to_string(i) + "]";
        if (!value[i].is_string()) return item + " must be a string";
        if (value[i].get_ref<const std::string&>().size() > kMaxDrySequenceBreakerBytes)
            return item + " must be at most " + std::to_string(kMaxDrySequenceBreakerBytes) + " bytes";
    }
    return std::nullopt;
}

namespace {

Status read_double(const nlohmann::json& value, std::string_view key, std::string_view origin,
                   std::optional<double>& out) {
    if (!value.is_number()) return Error{std::string(origin) + ": " + std::string(key) + " must be a number"};
    const double number = value.get<double>();
    if (auto problem = check_sampling_range(key, number)) return Error{std::string(origin) + ": " + *problem};
    out = number;
    return Ok{};
}

Status read_integer(const nlohmann::json& value, const SamplingParamSpec& spec, std::string_view origin,
                    std::optional<int64_t>& out) {
    const bool integral = value.is_number_integer() ||
                          (value.is_number_float() && std::floor(value.get<double>()) == value.get<double>());
    if (!integral) return Error{std::string(origin) + ": " + std::string(spec.name) + " must be an integer"};
    const double number = value.get<double>();
    if (auto problem = check_sampling_range(spec.name, number)) return Error{std::string(origin) + ": " + *problem};
    int64_t integer = value.is_number_integer() ? value.get<int64_t>() : static_cast<int64_t>(number);
    if (spec.negative_means_zero && integer < 0) integer = 0;
    out = integer;
    return Ok{};
}

Status read_strings(const nlohmann::json& value, std::string_view origin,
                    std::optional<std::vector<std::string>>& out) {
    if (auto problem = check_dry_sequence_breakers(value)) return Error{std::string(origin) + ": " + *problem};
    out = value.get<std::vector<std::string>>();
    return Ok{};
}

// Reads one parameter's value into its field of `values`; a JSON null leaves it unset.
template <class Param>
Status read_value(const Param& param, const nlohmann::json& value, std::string_view origin, SamplingValues& values) {
    if (value.is_null()) return Ok{};
    using Value = typename Param::Value;
    auto& field = param.field(values);
    if constexpr (std::is_same_v<Value, double>)
        return read_double(value, param.spec.name, origin, field);
    else if constexpr (std::is_same_v<Value, int64_t>)
        return read_integer(value, param.spec, origin, field);
    else
        return read_strings(value, origin, field);
}

std::string known_names() {
    std::string names;
    for_each_sampling_param(
        [&](const auto& param) { names += (names.empty() ? "" : ", ") + std::string(param.spec.name); });
    return names;
}

}  // namespace

Result<SamplingValues> parse_sampling_values(const nlohmann::json& object, std::string_view origin) {
    if (!object.is_object()) return Error{std::string(origin) + ": expected a JSON object of sampling parameters"};
    SamplingValues values;
    for (const auto& item : object.items()) {
        // Not a structured binding: clang 14 (the fuzz build) cannot capture one in the lambda below.
        const std::string& key = item.key();
        const nlohmann::json& value = item.value();
        bool known = false;
        Status status = Ok{};
        for_each_sampling_param([&](const auto& param) {
            if (param.spec.name != key) return;
            known = true;
            status = read_value(param, value, origin, values);
        });
        if (!known)
            return Error{std::string(origin) + ": unknown sampling parameter '" + key + "' (known: " + known_names() +
                         ")"};
        if (!status) return status.error();
    }
    return values;
}

}  // namespace tempered
