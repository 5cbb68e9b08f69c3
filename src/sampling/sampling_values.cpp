#include "sampling/sampling_values.h"

#include <cmath>

namespace tempered {

bool SamplingValues::empty() const {
    return !temperature && !top_p && !top_k && !min_p && !repetition_penalty && !presence_penalty &&
           !frequency_penalty && !seed;
}

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
        else
            return Error{std::string(origin) + ": unknown sampling parameter '" + key +
                         "' (known: temperature, top_p, top_k, min_p, repetition_penalty, presence_penalty, "
                         "frequency_penalty, seed)"};
        if (!status) return status.error();
    }
    return values;
}

}  // namespace tempered
