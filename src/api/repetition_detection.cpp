#include "api/repetition_detection.h"

#include <cstdint>
#include <limits>
#include <string>

namespace tempered::api {

namespace {

constexpr const char* kField = "repetition_detection";

// Reads one integer key into `out`, leaving it at vLLM's default 0 when absent or null.
FieldError read_size(const Json& object, const char* key, int32_t& out) {
    RequestedValue<int64_t> value;
    if (auto e = read_integer(find_field(object, key), param_path(kField, key), std::numeric_limits<int32_t>::min(),
                              std::numeric_limits<int32_t>::max(), value)) {
        return e;
    }
    if (value.given()) out = static_cast<int32_t>(*value.value);
    return std::nullopt;
}

}  // namespace

FieldError parse_repetition_detection(const Json* field, std::optional<RepetitionDetectionParams>& out) {
    if (field == nullptr || field->is_null()) return std::nullopt;
    if (!field->is_object()) return wrong_type(kField, "an object", *field);
    for (const auto& [key, value] : field->items()) {
        if (key != "max_pattern_size" && key != "min_pattern_size" && key != "min_count") {
            return invalid_request("Unknown parameter '" + param_path(kField, key) +
                                       "': expected max_pattern_size, min_pattern_size or min_count.",
                                   param_path(kField, key), "unknown_parameter");
        }
    }
    RepetitionDetectionParams params;
    if (auto e = read_size(*field, "max_pattern_size", params.max_pattern_size)) return e;
    if (auto e = read_size(*field, "min_pattern_size", params.min_pattern_size)) return e;
    if (auto e = read_size(*field, "min_count", params.min_count)) return e;

    auto valid = validate_repetition_detection(params);
    if (!valid) {
        const std::string param = param_path(kField, valid.error().field);
        return invalid_request("Invalid '" + param + "': " + valid.error().rule + ".", param, "invalid_value");
    }
    out = *valid;
    return std::nullopt;
}

}  // namespace tempered::api
