#include "api/response_format.h"

namespace tempered::api {
namespace {

FieldError missing(const std::string& param) {
    return invalid_request("Missing required parameter: '" + param + "'.", param, "missing_required_parameter");
}

// {"name": ..., "schema": {...}, "strict": bool, "description": ...}: OpenAI requires the name; the
// schema may be omitted (then any JSON value would do, which we do not offer: we ask for it).
FieldError parse_json_schema(const Json* field, ResponseFormat& out) {
    const std::string param = "response_format.json_schema";
    if (field == nullptr || field->is_null()) return missing(param);
    if (!field->is_object()) return wrong_type(param, "an object", *field);
    const Json* name = find_field(*field, "name");
    if (name == nullptr || name->is_null()) return missing(param_path(param, "name"));
    if (!name->is_string()) return wrong_type(param_path(param, "name"), "a string", *name);
    out.name = name->get<std::string>();
    const Json* schema = find_field(*field, "schema");
    if (schema == nullptr || schema->is_null()) return missing(param_path(param, "schema"));
    if (!schema->is_object() && !schema->is_boolean())
        return wrong_type(param_path(param, "schema"), "an object", *schema);
    out.schema = *schema;
    RequestedValue<bool> strict;
    if (auto e = read_bool(find_field(*field, "strict"), param_path(param, "strict"), strict)) return e;
    out.strict = strict.value_or(false);
    RequestedValue<std::string> description;
    return read_string(find_field(*field, "description"), param_path(param, "description"), description);
}

}  // namespace

const char* response_format_kind_name(ResponseFormat::Kind kind) {
    switch (kind) {
        case ResponseFormat::Kind::JsonObject: return "json_object";
        case ResponseFormat::Kind::JsonSchema: return "json_schema";
        case ResponseFormat::Kind::Grammar: return "grammar";
        case ResponseFormat::Kind::Text: return "text";
    }
    return "text";
}

FieldError parse_response_format(const Json* field, ResponseFormat& out) {
    if (field == nullptr || field->is_null()) return std::nullopt;
    if (!field->is_object()) return wrong_type("response_format", "an object", *field);
    const Json* type = find_field(*field, "type");
    if (type == nullptr || type->is_null()) return missing("response_format.type");
    if (!type->is_string()) return wrong_type("response_format.type", "a string", *type);
    const std::string name = type->get<std::string>();
    if (name == "text") {
        out.kind = ResponseFormat::Kind::Text;
    } else if (name == "json_object") {
        out.kind = ResponseFormat::Kind::JsonObject;
    } else if (name == "json_schema") {
        out.kind = ResponseFormat::Kind::JsonSchema;
        return parse_json_schema(find_field(*field, "json_schema"), out);
    } else {
        return invalid_request("Invalid value for 'response_format.type': '" + name +
                                   "'. Supported values are: 'text', 'json_object' and 'json_schema'.",
                               "response_format.type", "invalid_value");
    }
    return std::nullopt;
}

FieldError parse_structured_outputs(const Json* field, ResponseFormat& out) {
    const std::string param = "structured_outputs";
    if (field == nullptr || field->is_null()) return std::nullopt;
    if (!field->is_object()) return wrong_type(param, "an object", *field);
    if (out.kind != ResponseFormat::Kind::Text)
        return invalid_request("Give 'response_format' or 'structured_outputs', not both.", param, "invalid_value");
    if (field->size() != 1)
        return invalid_request("'structured_outputs' takes exactly one of 'json', 'json_object' and 'grammar'.", param,
                               "invalid_value");
    const auto only = field->begin();
    const std::string key = only.key();
    const Json& value = only.value();
    const std::string path = param_path(param, key);
    if (key == "json") {
        if (!value.is_object() && !value.is_boolean()) return wrong_type(path, "an object", value);
        out.kind = ResponseFormat::Kind::JsonSchema;
        out.name = "structured_outputs";
        out.schema = value;
    } else if (key == "json_object") {
        if (value != true) return invalid_request("'" + path + "' must be true.", path, "invalid_value");
        out.kind = ResponseFormat::Kind::JsonObject;
    } else if (key == "grammar") {
        if (!value.is_string()) return wrong_type(path, "a string", value);
        out.kind = ResponseFormat::Kind::Grammar;
        out.grammar = value.get<std::string>();
    } else {
        return invalid_request("'" + path +
                                   "' is not supported; 'structured_outputs' takes 'json', 'json_object' or "
                                   "'grammar' (GBNF).",
                               path, "invalid_value");
    }
    return std::nullopt;
}

}  // namespace tempered::api
