#include "grammar/schema_disjoint.h"

#include <set>
#include <string_view>
#include <vector>

namespace tempered::grammar {
namespace {

using json = nlohmann::ordered_json;

const std::set<std::string> kAllTypes = {"array", "boolean", "integer", "null", "number", "object", "string"};

// Follows $ref chains (a few hops: a cycle of bare refs allows nothing worth analysing).
const json& dereference(const json& schema, const RefResolver& resolve) {
    const json* node = &schema;
    for (int hops = 0; hops < 16 && node->is_object() && node->contains("$ref"); ++hops) {
        const json& ref = (*node)["$ref"];
        const json* target = ref.is_string() ? resolve(ref.get<std::string>()) : nullptr;
        if (!target) break;
        node = target;
    }
    return *node;
}

std::string type_of(const json& value) {
    if (value.is_object()) return "object";
    if (value.is_array()) return "array";
    if (value.is_string()) return "string";
    if (value.is_boolean()) return "boolean";
    if (value.is_null()) return "null";
    if (value.is_number_integer() || value.is_number_unsigned()) return "integer";
    const double number = value.get<double>();
    return number == static_cast<double>(static_cast<long long>(number)) ? "integer" : "number";
}

// The values a schema allows, when it is a const or an enum.
std::optional<std::vector<json>> finite_values(const json& schema) {
    if (!schema.is_object()) return std::nullopt;
    if (schema.contains("const")) return std::vector<json>{schema["const"]};
    if (schema.contains("enum") && schema["enum"].is_array()) {
        return std::vector<json>(schema["enum"].begin(), schema["enum"].end());
    }
    return std::nullopt;
}

// The JSON types a schema's values may have, as json_schema.cpp compiles it (a superset is fine).
std::set<std::string> types_of(const json& raw, const RefResolver& resolve, int depth = 0) {
    const json& schema = dereference(raw, resolve);
    if (!schema.is_object() || depth > 16) return kAllTypes;
    for (const char* combinator : {"anyOf", "oneOf"}) {
        if (!schema.contains(combinator) || !schema[combinator].is_array()) continue;
        std::set<std::string> types;
        for (const json& option : schema[combinator]) types.merge(types_of(option, resolve, depth + 1));
        return types;
    }
    if (auto values = finite_values(schema)) {
        std::set<std::string> types;
        for (const json& value : *values) types.insert(type_of(value));
        return types;
    }
    if (schema.contains("type")) {
        const json& type = schema["type"];
        if (type.is_string()) return {type.get<std::string>()};
        if (type.is_array()) {
            std::set<std::string> types;
            for (const json& name : type)
                if (name.is_string()) types.insert(name.get<std::string>());
            return types;
        }
        return kAllTypes;
    }
    auto has = [&](std::initializer_list<const char*> keywords) {
        for (const char* keyword : keywords)
            if (schema.contains(keyword)) return true;
        return false;
    };
    if (has({"properties", "required", "additionalProperties"})) return {"object"};
    if (has({"items", "prefixItems", "minItems", "maxItems"})) return {"array"};
    if (has({"minLength", "maxLength", "pattern", "format"})) return {"string"};
    if (has({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})) return {"number"};
    return kAllTypes;
}

// A type both sets allow, or "" when none ("number" includes integers).
std::string shared_type(const std::set<std::string>& a, const std::set<std::string>& b) {
    for (const std::string& type : a) {
        if (b.count(type)) return type;
        if ((type == "number" && b.count("integer")) || (type == "integer" && b.count("number"))) return "number";
    }
    return "";
}

bool values_disjoint(const std::vector<json>& a, const std::vector<json>& b) {
    for (const json& x : a)
        for (const json& y : b)
            if (x == y) return false;
    return true;
}

bool required_in(const json& schema, const std::string& name) {
    if (!schema.contains("required") || !schema["required"].is_array()) return false;
    for (const json& entry : schema["required"])
        if (entry == name) return true;
    return false;
}

// A property both object schemas require, whose const/enum values never coincide.
std::optional<std::string> distinguishing_property(const json& a, const json& b, const RefResolver& resolve) {
    if (!a.contains("properties") || !b.contains("properties")) return std::nullopt;
    const json& properties_a = a["properties"];
    const json& properties_b = b["properties"];
    if (!properties_a.is_object() || !properties_b.is_object()) return std::nullopt;
    for (const auto& [name, schema_a] : properties_a.items()) {
        if (!properties_b.contains(name) || !required_in(a, name) || !required_in(b, name)) continue;
        auto values_a = finite_values(dereference(schema_a, resolve));
        auto values_b = finite_values(dereference(properties_b[name], resolve));
        if (values_a && values_b && values_disjoint(*values_a, *values_b)) return name;
    }
    return std::nullopt;
}

// Why branches a and b may both match, or nullopt when they cannot.
std::optional<std::string> overlap(const json& raw_a, const json& raw_b, const RefResolver& resolve) {
    const json& a = dereference(raw_a, resolve);
    const json& b = dereference(raw_b, resolve);
    const std::string type = shared_type(types_of(a, resolve), types_of(b, resolve));
    if (type.empty()) return std::nullopt;
    auto values_a = finite_values(a), values_b = finite_values(b);
    if (values_a && values_b) {
        if (values_disjoint(*values_a, *values_b)) return std::nullopt;
        return "both allow the same const/enum value";
    }
    if (types_of(a, resolve) == std::set<std::string>{"object"} &&
        types_of(b, resolve) == std::set<std::string>{"object"} && a.is_object() && b.is_object() &&
        distinguishing_property(a, b, resolve)) {
        return std::nullopt;
    }
    if (type == "object") return "both allow objects and no property required by both has different const/enum values";
    return "both allow " + type;
}

}  // namespace

std::optional<std::string> oneof_overlap(const json& options, const RefResolver& resolve) {
    for (size_t i = 0; i < options.size(); ++i) {
        for (size_t j = i + 1; j < options.size(); ++j) {
            if (auto why = overlap(options[i], options[j], resolve)) {
                return "branches " + std::to_string(i) + " and " + std::to_string(j) + " may both match: " + *why;
            }
        }
    }
    return std::nullopt;
}

}  // namespace tempered::grammar
