#include "sampling/sampling_values.h"

#include <cmath>
#include <limits>

namespace tempered {

bool SamplingValues::empty() const {
    return !temperature && !top_p && !top_k && !min_p && !repetition_penalty && !presence_penalty &&
           !frequency_penalty && !seed && !dry_multiplier && !dry_base && !dry_allowed_length && !dry_penalty_last_n &&
           !dry_sequence_breakers;
}

namespace {

// DRY's bounds: llama-server's where it has them (allowed_length and penalty_last_n are int32 and not
// negative), plus -1 for "the whole history" (koboldcpp's and llama-server's older "context size"). A
// base below 1 turns DRY off silently in llama.cpp; here it is an error, so the client learns it.
std::optional<std::string> check_dry_range(std::string_view name, double value) {
    const std::string key(name);
    constexpr double kInt32Max = std::numeric_limits<int32_t>::max();
    const bool integral = std::floor(value) == value;
    if (name == "dry_multiplier" && !(value >= 0)) return key + " must be >= 0 (0 turns DRY off)";
    if (name == "dry_base" && !(value >= 1)) return key + " must be >= 1";
    if (name == "dry_allowed_length" && !(integral && value >= 0 && value <= kInt32Max))
        return key + " must be an integer in [0, 2147483647]";
    if (name == "dry_penalty_last_n" && !(integral && value >= -1 && value <= kInt32Max))
        return key + " must be an integer in [-1, 2147483647] (-1: the whole history, 0: off)";
    return std::nullopt;
}

}  // namespace

std::optional<std::string> check_sampling_range(std::string_view name, double value) {
    const std::string key(name);
    if (!std::isfinite(value)) return key + " must be a finite number";
    if (name == "temperature" && !(value >= 0 && value <= 2)) return key + " must be in [0, 2]";
    if (name == "top_p" && !(value > 0 && value <= 1)) return key + " must be in (0, 1]";
    if (name == "top_k" && !(value >= -1)) return key + " must be >= 1, or 0 or -1 for no top-k";
    if (name == "min_p" && !(value >= 0 && value <= 1)) return key + " must be in [0, 1]";
    if ((name == "presence_penalty" || name == "frequency_penalty") && !(value >= -2 && value <= 2))
        return key + " must be in [-2, 2]";
    if (name == "repetition_penalty" && !(value > 0 && value <= 2)) return key + " must be in (0, 2]";
    return check_dry_range(name, value);
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
    if (value.is_null()) return Ok{};
    if (!value.is_number()) return Error{std::string(origin) + ": " + std::string(key) + " must be a number"};
    const double number = value.get<double>();
    if (auto problem = check_sampling_range(key, number)) return Error{std::string(origin) + ": " + *problem};
    out = number;
    return Ok{};
}

Status read_integer(const nlohmann::json& value, std::string_view key, std::string_view origin,
                    std::optional<int64_t>& out) {
    if (value.is_null()) return Ok{};
    const bool integral = value.is_number_integer() ||
                          (value.is_number_float() && std::floor(value.get<double>()) == value.get<double>());
    if (!integral) return Error{std::string(origin) + ": " + std::string(key) + " must be an integer"};
    const double number = value.get<double>();
    if (auto problem = check_sampling_range(key, number)) return Error{std::string(origin) + ": " + *problem};
    int64_t integer = value.is_number_integer() ? value.get<int64_t>() : static_cast<int64_t>(number);
    if (key == "top_k" && integer < 0) integer = 0;  // -1 and 0 both mean "no top-k"
    out = integer;
    return Ok{};
}

Status read_breakers(const nlohmann::json& value, std::string_view origin,
                     std::optional<std::vector<std::string>>& out) {
    if (value.is_null()) return Ok{};
    if (auto problem = check_dry_sequence_breakers(value)) return Error{std::string(origin) + ": " + *problem};
    out = value.get<std::vector<std::string>>();
    return Ok{};
}

}  // namespace

Result<SamplingValues> parse_sampling_values(const nlohmann::json& object, std::string_view origin) {
    if (!object.is_object()) return Error{std::string(origin) + ": expected a JSON object of sampling parameters"};
    SamplingValues values;
    for (const auto& [key, value] : object.items()) {
        Status status = Ok{};
        if (key == "temperature")
            status = read_double(value, key, origin, values.temperature);
        else if (key == "top_p")
            status = read_double(value, key, origin, values.top_p);
        else if (key == "top_k")
            status = read_integer(value, key, origin, values.top_k);
        else if (key == "min_p")
            status = read_double(value, key, origin, values.min_p);
        else if (key == "repetition_penalty")
            status = read_double(value, key, origin, values.repetition_penalty);
        else if (key == "presence_penalty")
            status = read_double(value, key, origin, values.presence_penalty);
        else if (key == "frequency_penalty")
            status = read_double(value, key, origin, values.frequency_penalty);
        else if (key == "seed")
            status = read_integer(value, key, origin, values.seed);
        else if (key == "dry_multiplier")
            status = read_double(value, key, origin, values.dry_multiplier);
        else if (key == "dry_base")
            status = read_double(value, key, origin, values.dry_base);
        else if (key == "dry_allowed_length")
            status = read_integer(value, key, origin, values.dry_allowed_length);
        else if (key == "dry_penalty_last_n")
            status = read_integer(value, key, origin, values.dry_penalty_last_n);
        else if (key == "dry_sequence_breakers")
            status = read_breakers(value, origin, values.dry_sequence_breakers);
        else
            return Error{std::string(origin) + ": unknown sampling parameter '" + key +
                         "' (known: temperature, top_p, top_k, min_p, repetition_penalty, presence_penalty, "
                         "frequency_penalty, seed, dry_multiplier, dry_base, dry_allowed_length, "
                         "dry_penalty_last_n, dry_sequence_breakers)"};
        if (!status) return status.error();
    }
    return values;
}

}  // namespace tempered
