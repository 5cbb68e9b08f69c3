#include "api/json_fields.h"

#include <cmath>
#include <sstream>

namespace tempered::api {
namespace {

std::string format_number(double value) {
    std::ostringstream out;
    out << value;
    return out.str();
}

// Integral doubles as integers: 2.0 -> "2".
std::string format_bound(double value) {
    if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
    return format_number(value);
}

}  // namespace

std::string param_path(std::string_view parent, size_t index) {
    return std::string(parent) + "[" + std::to_string(index) + "]";
}

std::string param_path(std::string_view parent, std::string_view key) {
    return parent.empty() ? std::string(key) : std::string(parent) + "." + std::string(key);
}

bool Range::contains(double value) const {
    if (std::isnan(value)) return false;
    if (min_exclusive ? value <= min : value < min) return false;
    if (max_exclusive ? value >= max : value > max) return false;
    return true;
}

std::string Range::describe() const {
    return std::string(min_exclusive ? "(" : "[") + format_bound(min) + ", " + format_bound(max) +
           (max_exclusive ? ")" : "]");
}

const Json* find_field(const Json& object, std::string_view key) {
    const auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
}

std::string json_type_name(const Json& value) {
    switch (value.type()) {
        case Json::value_t::null: return "null";
        case Json::value_t::object: return "an object";
        case Json::value_t::array: return "an array";
        case Json::value_t::string: return "a string";
        case Json::value_t::boolean: return "a boolean";
        case Json::value_t::number_float: return "a number";
        case Json::value_t::number_integer:
        case Json::value_t::number_unsigned: return "an integer";
        default: return "an unsupported value";
    }
}

ApiError wrong_type(const std::string& param, std::string_view expected, const Json& got) {
    return invalid_request("Invalid type for '" + param + "': expected " + std::string(expected) + ", but got " +
                               json_type_name(got) + " instead.",
                           param, "invalid_type");
}

FieldError read_number(const Json* field, const std::string& param, const Range& range, RequestedValue<double>& out) {
    if (field == nullptr) return std::nullopt;
    if (field->is_null()) {
        out = RequestedValue<double>::null();
        return std::nullopt;
    }
    if (!field->is_number()) return wrong_type(param, "a number", *field);
    const double value = field->get<double>();
    if (!range.contains(value)) {
        return invalid_request("Invalid value for '" + param + "': expected a number in " + range.describe() +
                                   ", but got " + format_number(value) + " instead.",
                               param, "invalid_value");
    }
    out = RequestedValue<double>::of(value);
    return std::nullopt;
}

FieldError read_integer(const Json* field, const std::string& param, int64_t min, int64_t max,
                        RequestedValue<int64_t>& out) {
    if (field == nullptr) return std::nullopt;
    if (field->is_null()) {
        out = RequestedValue<int64_t>::null();
        return std::nullopt;
    }
    int64_t value = 0;
    if (field->is_number_integer()) {
        if (field->is_number_unsigned() &&
            field->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
            value = std::numeric_limits<int64_t>::max();
        } else {
            value = field->get<int64_t>();
        }
    } else if (field->is_number_float()) {
        const double number = field->get<double>();
        if (std::trunc(number) != number || std::fabs(number) > 9.0e18) {
            return wrong_type(param, "an integer", *field);
        }
        value = static_cast<int64_t>(number);
    } else {
        return wrong_type(param, "an integer", *field);
    }
    if (value < min || value > max) {
        const std::string upper = max == std::numeric_limits<int64_t>::max() ? "" : " and <= " + std::to_string(max);
        return invalid_request("Invalid value for '" + param + "': expected an integer >= " + std::to_string(min) +
                                   upper + ", but got " + std::to_string(value) + " instead.",
                               param, "invalid_value");
    }
    out = RequestedValue<int64_t>::of(value);
    return std::nullopt;
}

FieldError read_bool(const Json* field, const std::string& param, RequestedValue<bool>& out) {
    if (field == nullptr) return std::nullopt;
    if (field->is_null()) {
        out = RequestedValue<bool>::null();
        return std::nullopt;
    }
    if (!field->is_boolean()) return wrong_type(param, "a boolean", *field);
    out = RequestedValue<bool>::of(field->get<bool>());
    return std::nullopt;
}

FieldError read_string(const Json* field, const std::string& param, RequestedValue<std::string>& out) {
    if (field == nullptr) return std::nullopt;
    if (field->is_null()) {
        out = RequestedValue<std::string>::null();
        return std::nullopt;
    }
    if (!field->is_string()) return wrong_type(param, "a string", *field);
    out = RequestedValue<std::string>::of(field->get<std::string>());
    return std::nullopt;
}

}  // namespace tempered::api
