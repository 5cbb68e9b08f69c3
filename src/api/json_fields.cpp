#include "api/json_fields.h"

#include <cmath>
#include <sstream>
#include <vector>

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

// The path of the value a parse is reading, kept from the parser's events: a frame per open object
// (the last key read) or array (the index of the element being read).
class ValuePath {
public:
    bool on_event(Json::parse_event_t event, const Json& parsed) {
        using Event = Json::parse_event_t;
        switch (event) {
            case Event::object_start: frames_.push_back({false, 0, ""}); break;
            case Event::array_start: frames_.push_back({true, 0, ""}); break;
            case Event::key: frames_.back().key = parsed.get<std::string>(); break;
            case Event::value: element_done(); break;
            case Event::object_end:
            case Event::array_end:
                frames_.pop_back();
                element_done();
                break;
        }
        return true;
    }

    std::string path() const {
        std::string joined;
        for (const Frame& frame : frames_)
            joined = frame.array ? param_path(joined, frame.index) : param_path(joined, frame.key);
        return joined;
    }

private:
    struct Frame {
        bool array = false;
        size_t index = 0;
        std::string key;
    };
    void element_done() {
        if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
    }
    std::vector<Frame> frames_;
};

ApiError integer_out_of_range(const std::string& param, int64_t min, int64_t max, const std::string& got) {
    const std::string upper = max == std::numeric_limits<int64_t>::max() ? "" : " and <= " + std::to_string(max);
    return invalid_request("Invalid value for '" + param + "': expected an integer >= " + std::to_string(min) + upper +
                               ", but got " + got + " instead.",
                           param, "invalid_value");
}

}  // namespace

std::string param_path(std::string_view parent, size_t index) {
    return std::string(parent) + "[" + std::to_string(index) + "]";
}

std::string param_path(std::string_view parent, std::string_view key) {
    return parent.empty() ? std::string(key) : std::string(parent) + "." + std::string(key);
}

ApiError number_overflow_error(std::string_view body) {
    ValuePath tracker;
    try {
        const auto track = [&tracker](int, Json::parse_event_t event, Json& parsed) {
            return tracker.on_event(event, parsed);
        };
        [[maybe_unused]] const Json never = Json::parse(body, track);
    } catch (const Json::exception&) {
        // Expected: the same overflow, now with the tracker standing on the value that caused it.
    }
    const std::string param = tracker.path();
    const std::string name = param.empty() ? "the request body" : "'" + param + "'";
    return invalid_request(
        "Invalid value for " + name + ": the number is out of range; JSON numbers must fit a double (about 1.8e308).",
        param, "invalid_value");
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
        if (std::trunc(number) != number) return wrong_type(param, "an integer", *field);
        // 1e19, 2^64 (which nlohmann reads as a double): integers, but beyond any field's range.
        if (std::fabs(number) > 9.0e18) return integer_out_of_range(param, min, max, field->dump());
        value = static_cast<int64_t>(number);
    } else {
        return wrong_type(param, "an integer", *field);
    }
    if (value < min || value > max) return integer_out_of_range(param, min, max, std::to_string(value));
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
