#include "toolcalls/arguments_validator.h"

#include <cmath>
#include <regex>
#include <string_view>

namespace tempered::toolcalls {
namespace {

using json = nlohmann::ordered_json;

// JSON equality: key order does not matter (ordered_json's == says it does), 1 == 1.0, true != 1.
bool json_equal(const json& a, const json& b) {
    if (a.is_number() && b.is_number()) return a.get<double>() == b.get<double>();
    if (a.type() != b.type()) return false;
    if (a.is_object()) {
        if (a.size() != b.size()) return false;
        for (const auto& [key, value] : a.items()) {
            auto other = b.find(key);
            if (other == b.end() || !json_equal(value, *other)) return false;
        }
        return true;
    }
    if (a.is_array()) {
        if (a.size() != b.size()) return false;
        for (size_t i = 0; i < a.size(); ++i)
            if (!json_equal(a[i], b[i])) return false;
        return true;
    }
    return a == b;
}

bool has_type(const json& instance, std::string_view type) {
    if (type == "object") return instance.is_object();
    if (type == "array") return instance.is_array();
    if (type == "string") return instance.is_string();
    if (type == "boolean") return instance.is_boolean();
    if (type == "null") return instance.is_null();
    if (type == "number") return instance.is_number();
    if (type == "integer") {
        if (instance.is_number_integer()) return true;
        const double value = instance.is_number_float() ? instance.get<double>() : 0.5;
        return std::isfinite(value) && std::floor(value) == value;  // 2.0 is an integer, as in jsonschema
    }
    return false;
}

size_t code_points(const std::string& text) {
    size_t count = 0;
    for (const char c : text)
        if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++count;
    return count;
}

class Validator {
public:
    explicit Validator(const json& root) : root_(root) {}

    std::optional<std::string> check(const json& schema, const json& instance, const std::string& at, int depth);

private:
    std::optional<std::string> fail(const std::string& at, const std::string& what) {
        return "at '" + (at.empty() ? std::string("/") : at) + "': " + what;
    }
    std::optional<std::string> check_generic(const json& schema, const json& instance, const std::string& at,
                                             int depth);
    std::optional<std::string> check_object(const json& schema, const json& instance, const std::string& at, int depth);
    std::optional<std::string> check_array(const json& schema, const json& instance, const std::string& at, int depth);
    std::optional<std::string> check_string(const json& schema, const json& instance, const std::string& at);
    std::optional<std::string> check_number(const json& schema, const json& instance, const std::string& at);
    std::optional<std::string> check_alternatives(const json& schema, const json& instance, const std::string& at,
                                                  int depth);
    const json* resolve(const std::string& ref) const;

    const json& root_;
};

// Deep enough for any schema a tool declares; a recursive $ref over a deep instance stops here.
constexpr int kMaxDepth = 256;

std::optional<std::string> Validator::check(const json& schema, const json& instance, const std::string& at,
                                            int depth) {
    if (depth > kMaxDepth) return fail(at, "nested too deeply");
    if (schema.is_boolean()) return schema.get<bool>() ? std::nullopt : fail(at, "no value is allowed here");
    if (!schema.is_object()) return std::nullopt;
    if (auto ref = schema.find("$ref"); ref != schema.end() && ref->is_string()) {
        const json* target = resolve(ref->get<std::string>());
        if (target == nullptr) return fail(at, "unresolvable $ref " + ref->get<std::string>());
        if (auto e = check(*target, instance, at, depth + 1)) return e;
    }
    if (auto e = check_generic(schema, instance, at, depth)) return e;
    if (instance.is_object()) return check_object(schema, instance, at, depth);
    if (instance.is_array()) return check_array(schema, instance, at, depth);
    if (instance.is_string()) return check_string(schema, instance, at);
    if (instance.is_number()) return check_number(schema, instance, at);
    return std::nullopt;
}

std::optional<std::string> Validator::check_generic(const json& schema, const json& instance, const std::string& at,
                                                    int depth) {
    if (auto type = schema.find("type"); type != schema.end()) {
        bool matched = false;
        if (type->is_string()) matched = has_type(instance, type->get<std::string>());
        if (type->is_array()) {
            for (const json& name : *type)
                matched = matched || (name.is_string() && has_type(instance, name.get<std::string>()));
        }
        if (!matched) return fail(at, "expected type " + type->dump() + ", got " + instance.dump());
    }
    if (auto values = schema.find("enum"); values != schema.end() && values->is_array()) {
        bool found = false;
        for (const json& value : *values) found = found || json_equal(value, instance);
        if (!found) return fail(at, instance.dump() + " is not one of " + values->dump());
    }
    if (auto value = schema.find("const"); value != schema.end() && !json_equal(*value, instance))
        return fail(at, "expected " + value->dump());
    return check_alternatives(schema, instance, at, depth);
}

std::optional<std::string> Validator::check_alternatives(const json& schema, const json& instance,
                                                         const std::string& at, int depth) {
    if (auto options = schema.find("anyOf"); options != schema.end() && options->is_array()) {
        bool any = false;
        for (const json& option : *options) any = any || !check(option, instance, at, depth + 1);
        if (!any) return fail(at, "matches none of anyOf");
    }
    if (auto options = schema.find("oneOf"); options != schema.end() && options->is_array()) {
        int matches = 0;
        for (const json& option : *options) matches += check(option, instance, at, depth + 1) ? 0 : 1;
        if (matches != 1) return fail(at, "matches " + std::to_string(matches) + " of oneOf, not exactly one");
    }
    return std::nullopt;
}

std::optional<std::string> Validator::check_object(const json& schema, const json& instance, const std::string& at,
                                                   int depth) {
    if (auto required = schema.find("required"); required != schema.end() && required->is_array()) {
        for (const json& name : *required)
            if (name.is_string() && !instance.contains(name.get<std::string>()))
                return fail(at, "missing required property '" + name.get<std::string>() + "'");
    }
    const auto properties = schema.find("properties");
    const auto additional = schema.find("additionalProperties");
    for (const auto& [key, value] : instance.items()) {
        const std::string member_at = at + "/" + key;
        if (properties != schema.end() && properties->is_object() && properties->contains(key)) {
            if (auto e = check((*properties)[key], value, member_at, depth + 1)) return e;
        } else if (additional != schema.end()) {
            if (additional->is_boolean() && !additional->get<bool>())
                return fail(at, "unexpected property '" + key + "'");
            if (auto e = check(*additional, value, member_at, depth + 1)) return e;
        }
    }
    return std::nullopt;
}

std::optional<std::string> Validator::check_array(const json& schema, const json& instance, const std::string& at,
                                                  int depth) {
    const auto count = static_cast<int64_t>(instance.size());
    if (auto min = schema.find("minItems"); min != schema.end() && min->is_number() && count < min->get<int64_t>())
        return fail(at, "fewer than " + min->dump() + " items");
    if (auto max = schema.find("maxItems"); max != schema.end() && max->is_number() && count > max->get<int64_t>())
        return fail(at, "more than " + max->dump() + " items");
    size_t first_item = 0;
    if (auto prefix = schema.find("prefixItems"); prefix != schema.end() && prefix->is_array()) {
        for (; first_item < prefix->size() && first_item < instance.size(); ++first_item) {
            const std::string item_at = at + "/" + std::to_string(first_item);
            if (auto e = check((*prefix)[first_item], instance[first_item], item_at, depth + 1)) return e;
        }
    }
    if (auto items = schema.find("items"); items != schema.end()) {
        for (size_t i = first_item; i < instance.size(); ++i)
            if (auto e = check(*items, instance[i], at + "/" + std::to_string(i), depth + 1)) return e;
    }
    return std::nullopt;
}

std::optional<std::string> Validator::check_string(const json& schema, const json& instance, const std::string& at) {
    const std::string& text = instance.get_ref<const std::string&>();
    const auto length = static_cast<int64_t>(code_points(text));
    if (auto min = schema.find("minLength"); min != schema.end() && min->is_number() && length < min->get<int64_t>())
        return fail(at, "shorter than " + min->dump() + " characters");
    if (auto max = schema.find("maxLength"); max != schema.end() && max->is_number() && length > max->get<int64_t>())
        return fail(at, "longer than " + max->dump() + " characters");
    if (auto pattern = schema.find("pattern"); pattern != schema.end() && pattern->is_string()) {
        try {
            if (!std::regex_search(text, std::regex(pattern->get<std::string>(), std::regex::ECMAScript)))
                return fail(at, "does not match pattern " + pattern->dump());
        } catch (const std::regex_error&) {
            return fail(at, "pattern " + pattern->dump() + " cannot be checked");
        }
    }
    return std::nullopt;
}

std::optional<std::string> Validator::check_number(const json& schema, const json& instance, const std::string& at) {
    const double value = instance.get<double>();
    auto bound = [&](const char* keyword, auto broken) -> std::optional<std::string> {
        auto limit = schema.find(keyword);
        if (limit == schema.end() || !limit->is_number() || !broken(value, limit->get<double>())) return std::nullopt;
        return fail(at, instance.dump() + " violates " + keyword + " " + limit->dump());
    };
    if (auto e = bound("minimum", [](double v, double l) { return v < l; })) return e;
    if (auto e = bound("maximum", [](double v, double l) { return v > l; })) return e;
    if (auto e = bound("exclusiveMinimum", [](double v, double l) { return v <= l; })) return e;
    return bound("exclusiveMaximum", [](double v, double l) { return v >= l; });
}

const json* Validator::resolve(const std::string& ref) const {
    if (ref == "#") return &root_;
    if (!ref.starts_with("#/")) return nullptr;
    try {
        const json::json_pointer pointer(ref.substr(1));
        return root_.contains(pointer) ? &root_.at(pointer) : nullptr;
    } catch (const json::exception&) {
        return nullptr;
    }
}

}  // namespace

std::optional<std::string> find_schema_violation(const nlohmann::ordered_json& schema,
                                                 const nlohmann::ordered_json& instance) {
    return Validator(schema).check(schema, instance, "", 0);
}

}  // namespace tempered::toolcalls
