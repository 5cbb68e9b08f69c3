// Typed reads of request JSON fields. Each read names the field's full path in the error it returns
// ("messages[1].content", "stream_options.include_usage"), so a 400 always says which value was wrong.
// A missing key and a JSON null leave the output at its default (and RequestedValue records which).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/errors.h"
#include "api/requested_value.h"

namespace tempered::api {

// Request bodies keep the client's key order, as a Python dict does: tools and template kwargs reach
// the chat template as sent, and `tojson` prints them in that order.
using Json = nlohmann::ordered_json;
using FieldError = std::optional<ApiError>;

// "messages" + 1 -> "messages[1]"; "stream_options" + "include_usage" -> "stream_options.include_usage".
std::string param_path(std::string_view parent, size_t index);
std::string param_path(std::string_view parent, std::string_view key);

// The bounds of a numeric field; an exclusive bound is reported as such ("> 0").
struct Range {
    double min = -std::numeric_limits<double>::infinity();
    double max = std::numeric_limits<double>::infinity();
    bool min_exclusive = false;
    bool max_exclusive = false;
    bool contains(double value) const;
    std::string describe() const;  // "[0, 2]", "(0, 1]"
};

// `object[key]`, or nullptr when absent. `object` must be a JSON object.
const Json* find_field(const Json& object, std::string_view key);

// Readers: `param` is the name used in errors (the full path).
FieldError read_number(const Json* field, const std::string& param, const Range& range, RequestedValue<double>& out);
// Integers accept integral floats (3.0) as clients serialise them; not 3.5, strings or bools.
FieldError read_integer(const Json* field, const std::string& param, int64_t min, int64_t max,
                        RequestedValue<int64_t>& out);
FieldError read_bool(const Json* field, const std::string& param, RequestedValue<bool>& out);
FieldError read_string(const Json* field, const std::string& param, RequestedValue<std::string>& out);

// The 400 for a body nlohmann refused with a number that does not fit a double (1e309, -1e400): the
// body is read again with a path tracker, so the error names the field ("logit_bias.42",
// "response_format.json_schema.schema.maximum") as any other invalid value does.
ApiError number_overflow_error(std::string_view body);

// Describes a JSON value's type for messages: "a string", "an array", "null".
std::string json_type_name(const Json& value);

ApiError wrong_type(const std::string& param, std::string_view expected, const Json& got);

}  // namespace tempered::api
