#include "grammar/json_schema.h"

#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "grammar/numeric_range.h"
#include "grammar/object_keys.h"
#include "grammar/regex.h"
#include "grammar/schema_disjoint.h"

namespace tempered::grammar {
namespace {

using json = nlohmann::ordered_json;

const std::set<std::string_view> kAnnotations = {"title",   "description", "default", "examples",
                                                 "$schema", "$id",         "$comment"};
const std::set<std::string_view> kSupported = {"type",
                                               "properties",
                                               "required",
                                               "additionalProperties",
                                               "enum",
                                               "const",
                                               "items",
                                               "prefixItems",
                                               "minItems",
                                               "maxItems",
                                               "anyOf",
                                               "oneOf",
                                               "$ref",
                                               "$defs",
                                               "definitions",
                                               "minLength",
                                               "maxLength",
                                               "minimum",
                                               "maximum",
                                               "exclusiveMinimum",
                                               "exclusiveMaximum",
                                               "pattern",
                                               "format"};
const std::set<std::string_view> kObjectKeywords = {"properties", "required", "additionalProperties"};
const std::set<std::string_view> kArrayKeywords = {"items", "prefixItems", "minItems", "maxItems"};
const std::set<std::string_view> kStringKeywords = {"minLength", "maxLength", "pattern", "format"};
const std::set<std::string_view> kNumberKeywords = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};

// Regexes for the supported formats, written for compile_pattern (so over the decoded string). Dates are
// exact (month lengths, leap years, years 0001-9999) because validators that check formats parse them.
#define TEMPERED_YEAR R"(([1-9]\d{3}|0[1-9]\d{2}|00[1-9]\d|000[1-9]))"
#define TEMPERED_LEAP_YEAR R"((\d\d(0[48]|[2468][048]|[13579][26])|(0[48]|[2468][048]|[13579][26])00))"
#define TEMPERED_DATE                                                                                                        \
    "(" TEMPERED_YEAR                                                                                                        \
    R"(-((0[13578]|1[02])-(0[1-9]|[12]\d|3[01])|(0[469]|11)-(0[1-9]|[12]\d|30)|02-(0[1-9]|1\d|2[0-8]))|)" TEMPERED_LEAP_YEAR \
    "-02-29)"
#define TEMPERED_TIME R"(([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,9})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d))"
const std::map<std::string_view, std::string_view> kFormats = {
    {"date", "^" TEMPERED_DATE "$"},
    {"time", "^" TEMPERED_TIME "$"},
    {"date-time", "^" TEMPERED_DATE "T" TEMPERED_TIME "$"},
    {"uuid", R"(^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$)"},
    {"email", R"(^[A-Za-z0-9._+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$)"},
};
#undef TEMPERED_DATE
#undef TEMPERED_TIME
#undef TEMPERED_LEAP_YEAR
#undef TEMPERED_YEAR

std::string pointer_token(std::string_view key) {
    std::string out;
    for (char c : key) {
        if (c == '~')
            out += "~0";
        else if (c == '/')
            out += "~1";
        else
            out += c;
    }
    return out;
}

std::optional<NumericBound> bound(const json& schema, const char* inclusive, const char* exclusive) {
    std::optional<NumericBound> result;
    if (schema.contains(inclusive)) result = NumericBound{schema[inclusive].get<double>(), false};
    if (schema.contains(exclusive)) {
        NumericBound strict{schema[exclusive].get<double>(), true};
        const bool tighter = !result || (std::string_view(inclusive) == "minimum" ? strict.value >= result->value
                                                                                  : strict.value <= result->value);
        if (tighter) result = strict;
    }
    return result;
}

class SchemaCompiler {
public:
    SchemaCompiler(const json& root, GrammarBuilder& builder) : root_(root), builder_(builder) {}

    // Defines the schema's rules in the builder; returns the rule of the root schema.
    Result<RuleId, SchemaError> compile_rules() {
        const RuleId root_rule = builder_.add_rule();
        ref_rules_["#"] = root_rule;
        builder_.define(root_rule, schema(root_, ""));
        while (!pending_refs_.empty() && !error_) {
            auto [ref, rule] = pending_refs_.back();
            pending_refs_.pop_back();
            builder_.define(rule, schema(*resolve(ref), ref.substr(1)));
        }
        if (error_) return *error_;
        return root_rule;
    }

    Result<Grammar, SchemaError> compile() {
        auto root_rule = compile_rules();
        if (!root_rule) return root_rule.error();
        auto grammar = builder_.build(*root_rule);
        if (!grammar) return SchemaError{"", "", grammar.error().message};
        return std::move(grammar.value());
    }

private:
    struct GenericRules {
        RuleId value, object, array, string;
        RuleId string_rest;  // a string after its opening quote: characters, then the closing quote
    };

    Expr fail(std::string keyword, const std::string& path, std::string message) {
        if (!error_) {
            error_ = SchemaError{keyword, path, message + " (keyword '" + keyword + "' at '" + path + "')"};
        }
        return Expr::empty();
    }

    Expr schema(const json& node, const std::string& path);
    Expr typed(const json& node, const std::string& path, std::string_view type);
    Expr string_schema(const json& node, const std::string& path);
    Expr number_schema(const json& node, const std::string& path, bool integer);
    Expr object_schema(const json& node, const std::string& path);
    Expr array_schema(const json& node, const std::string& path);
    Expr reference(const std::string& ref, const std::string& path);
    const json* resolve(const std::string& ref) const;
    bool check_keywords(const json& node, const std::string& path);
    const GenericRules& generic_rules();

    const json& root_;
    GrammarBuilder& builder_;
    std::map<std::string, RuleId> ref_rules_;
    std::vector<std::pair<std::string, RuleId>> pending_refs_;
    std::optional<GenericRules> generic_;
    std::optional<SchemaError> error_;
};

// The any-value grammar, built once on first use: value, object, array and string as shared rules.
const SchemaCompiler::GenericRules& SchemaCompiler::generic_rules() {
    if (generic_) return *generic_;
    GenericRules rules{builder_.add_rule(), builder_.add_rule(), builder_.add_rule(), builder_.add_rule(),
                       builder_.add_rule()};
    generic_ = rules;
    const Expr value = Expr::reference(rules.value), string = Expr::reference(rules.string);
    builder_.define(rules.string_rest,
                    Expr::sequence({Expr::repeat(json_string_char(), 0, Expr::kUnbounded), Expr::literal("\"")}));
    builder_.define(rules.string, Expr::sequence({Expr::literal("\""), Expr::reference(rules.string_rest)}));
    const Expr member = Expr::sequence({string, Expr::literal(": "), value});
    builder_.define(
        rules.object,
        Expr::sequence(
            {Expr::literal("{"),
             Expr::optional(Expr::sequence(
                 {member, Expr::repeat(Expr::sequence({Expr::literal(", "), member}), 0, Expr::kUnbounded)})),
             Expr::literal("}")}));
    builder_.define(
        rules.array,
        Expr::sequence({Expr::literal("["),
                        Expr::optional(Expr::sequence(
                            {value, Expr::repeat(Expr::sequence({Expr::literal(", "), value}), 0, Expr::kUnbounded)})),
                        Expr::literal("]")}));
    builder_.define(rules.value, Expr::choice({Expr::reference(rules.object), Expr::reference(rules.array), string,
                                               any_json_number(), Expr::literal("true"), Expr::literal("false"),
                                               Expr::literal("null")}));
    return *generic_;
}

bool SchemaCompiler::check_keywords(const json& node, const std::string& path) {
    for (const auto& [key, value] : node.items()) {
        if (kAnnotations.count(key) || kSupported.count(key)) continue;
        fail(key, path, "unsupported JSON Schema keyword '" + key + "'");
        return false;
    }
    return true;
}

Expr SchemaCompiler::schema(const json& node, const std::string& path) {
    if (error_) return Expr::empty();
    if (node.is_boolean()) {
        if (node.get<bool>()) return Expr::reference(generic_rules().value);
        return fail("false", path, "the schema `false` accepts nothing");
    }
    if (!node.is_object()) return fail("", path, "a schema must be an object or a boolean");
    if (!check_keywords(node, path)) return Expr::empty();
    if (node.contains("$ref")) {
        for (const auto& [key, value] : node.items()) {
            if (key != "$ref" && key != "$defs" && key != "definitions" && !kAnnotations.count(key)) {
                return fail(key, path, "keywords beside $ref are not supported");
            }
        }
        if (!node["$ref"].is_string()) return fail("$ref", path, "$ref must be a string");
        return reference(node["$ref"].get<std::string>(), path);
    }
    for (const char* combinator : {"anyOf", "oneOf"}) {
        if (!node.contains(combinator)) continue;
        const json& options = node[combinator];
        if (!options.is_array() || options.empty()) return fail(combinator, path, "must be a non-empty array");
        for (const auto& [key, value] : node.items()) {
            if (key != combinator && key != "$defs" && key != "definitions" && !kAnnotations.count(key)) {
                return fail(key, path, std::string("keywords beside ") + combinator + " are not supported");
            }
        }
        // oneOf is compiled as anyOf, which is exact only when no value can satisfy two branches.
        if (std::string_view(combinator) == "oneOf") {
            auto resolver = [this](const std::string& ref) { return resolve(ref); };
            if (auto why = oneof_overlap(options, resolver)) {
                return fail(
                    combinator, path,
                    "oneOf needs provably disjoint branches (" + *why + "); use anyOf when a value may match several");
            }
        }
        std::vector<Expr> choices;
        for (size_t i = 0; i < options.size(); ++i) {
            choices.push_back(schema(options[i], path + "/" + combinator + "/" + std::to_string(i)));
        }
        return Expr::choice(std::move(choices));
    }
    if (node.contains("const")) return Expr::literal(canonical_json(node["const"]));
    if (node.contains("enum")) {
        const json& values = node["enum"];
        if (!values.is_array() || values.empty()) return fail("enum", path, "enum must be a non-empty array");
        std::vector<Expr> choices;
        for (const json& value : values) choices.push_back(Expr::literal(canonical_json(value)));
        return Expr::choice(std::move(choices));
    }
    if (node.contains("type")) {
        const json& type = node["type"];
        if (type.is_string()) return typed(node, path, type.get<std::string>());
        if (!type.is_array() || type.empty())
            return fail("type", path, "type must be a name or a non-empty array of names");
        std::vector<Expr> choices;
        for (const json& name : type) {
            if (!name.is_string()) return fail("type", path, "type names must be strings");
            choices.push_back(typed(node, path, name.get<std::string>()));
        }
        return Expr::choice(std::move(choices));
    }
    // No type: the keywords present say which kind of value is meant.
    auto has_any = [&](const std::set<std::string_view>& keywords) {
        for (std::string_view keyword : keywords)
            if (node.contains(keyword)) return true;
        return false;
    };
    if (has_any(kObjectKeywords)) return typed(node, path, "object");
    if (has_any(kArrayKeywords)) return typed(node, path, "array");
    if (has_any(kStringKeywords)) return typed(node, path, "string");
    if (has_any(kNumberKeywords)) return typed(node, path, "number");
    return Expr::reference(generic_rules().value);
}

Expr SchemaCompiler::typed(const json& node, const std::string& path, std::string_view type) {
    if (type == "string") return string_schema(node, path);
    if (type == "integer") return number_schema(node, path, true);
    if (type == "number") return number_schema(node, path, false);
    if (type == "boolean") return Expr::choice({Expr::literal("true"), Expr::literal("false")});
    if (type == "null") return Expr::literal("null");
    if (type == "object") return object_schema(node, path);
    if (type == "array") return array_schema(node, path);
    return fail("type", path, "unknown type '" + std::string(type) + "'");
}

Expr SchemaCompiler::string_schema(const json& node, const std::string& path) {
    const bool has_length = node.contains("minLength") || node.contains("maxLength");
    const Expr quote = Expr::literal("\"");
    if (node.contains("pattern") || node.contains("format")) {
        const char* keyword = node.contains("pattern") ? "pattern" : "format";
        if (has_length)
            return fail("minLength", path,
                        std::string("minLength/maxLength together with ") + keyword + " are not supported");
        if (node.contains("pattern") && node.contains("format"))
            return fail("format", path, "format together with pattern is not supported");
        if (!node[keyword].is_string()) return fail(keyword, path, std::string(keyword) + " must be a string");
        std::string regex = node[keyword].get<std::string>();
        if (node.contains("format")) {
            auto format = kFormats.find(regex);
            if (format == kFormats.end()) return fail("format", path, "unsupported format '" + regex + "'");
            regex = format->second;
        }
        auto body = compile_pattern(regex);
        if (!body) return fail(keyword, path, body.error().message);
        return Expr::sequence({quote, std::move(body.value()), quote});
    }
    if (!has_length) return Expr::reference(generic_rules().string);
    for (const char* keyword : {"minLength", "maxLength"}) {
        if (node.contains(keyword) && !node[keyword].is_number_unsigned()) {
            return fail(keyword, path, std::string(keyword) + " must be a non-negative integer");
        }
    }
    const uint64_t min = node.value("minLength", uint64_t{0});
    const uint64_t max = node.value("maxLength", uint64_t{Expr::kUnbounded});
    if (min > 10000 || (max != Expr::kUnbounded && max > 10000))
        return fail("maxLength", path, "string lengths above 10000 are not supported");
    if (max < min) return fail("maxLength", path, "maxLength is below minLength");
    return Expr::sequence(
        {quote, Expr::repeat(json_string_char(), static_cast<uint32_t>(min), static_cast<uint32_t>(max)), quote});
}

Expr SchemaCompiler::number_schema(const json& node, const std::string& path, bool integer) {
    for (const char* keyword : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
        if (node.contains(keyword) && !node[keyword].is_number())
            return fail(keyword, path, std::string(keyword) + " must be a number");
    }
    const auto lower = bound(node, "minimum", "exclusiveMinimum");
    const auto upper = bound(node, "maximum", "exclusiveMaximum");
    auto expr = integer ? integer_in_range(lower, upper) : number_in_range(lower, upper);
    if (!expr) return fail(lower ? "minimum" : "maximum", path, "no number satisfies the bounds");
    return std::move(*expr);
}

Expr SchemaCompiler::reference(const std::string& ref, const std::string& path) {
    if (auto known = ref_rules_.find(ref); known != ref_rules_.end()) return Expr::reference(known->second);
    if (!resolve(ref))
        return fail("$ref", path, "unresolvable $ref '" + ref + "' (only local refs into #, #/$defs or #/definitions)");
    const RuleId rule = builder_.add_rule();
    ref_rules_[ref] = rule;
    pending_refs_.emplace_back(ref, rule);
    return Expr::reference(rule);
}

const json* SchemaCompiler::resolve(const std::string& ref) const {
    if (ref == "#") return &root_;
    if (ref.rfind("#/", 0) != 0) return nullptr;
    try {
        const json::json_pointer pointer(ref.substr(1));
        return root_.contains(pointer) ? &root_.at(pointer) : nullptr;
    } catch (const json::exception&) {
        return nullptr;
    }
}

// {"a": A, "b": B} with `required` and optional members in schema order, and extra members (when
// additionalProperties allows them) after the declared ones. start[i] continues before any member was
// written, after[i] after at least one: only after[i] writes the ", " separator.
Expr SchemaCompiler::object_schema(const json& node, const std::string& path) {
    const json properties = node.value("properties", json::object());
    const json required = node.value("required", json::array());
    if (!properties.is_object()) return fail("properties", path, "properties must be an object");
    if (!required.is_array()) return fail("required", path, "required must be an array of names");
    std::set<std::string> required_names;
    for (const json& name : required) {
        if (!name.is_string()) return fail("required", path, "required must be an array of names");
        required_names.insert(name.get<std::string>());
    }
    struct Member {
        RuleId rule;
        bool required;
    };
    std::vector<Member> members;
    std::vector<std::string> declared_names;
    auto add_member = [&](const std::string& name, const json& value_schema, const std::string& value_path) {
        const RuleId rule = builder_.add_rule();
        builder_.define(rule,
                        Expr::sequence({Expr::literal(canonical_json(name) + ": "), schema(value_schema, value_path)}));
        members.push_back({rule, required_names.count(name) > 0});
        declared_names.push_back(name);
    };
    for (const auto& [name, value_schema] : properties.items()) {
        add_member(name, value_schema, path + "/properties/" + pointer_token(name));
    }
    for (const std::string& name : required_names) {
        if (!properties.contains(name)) add_member(name, json(true), path + "/required");
    }

    std::optional<Expr> extra;  // one additional "key": value member, when allowed
    const json additional = node.value("additionalProperties", json(properties.empty()));
    if (!(additional.is_boolean() && !additional.get<bool>())) {
        const RuleId rule = builder_.add_rule();
        // An extra key never repeats a declared name (jsonschema would check that member against the
        // declared schema, not additionalProperties).
        Expr key = declared_names.empty() ? Expr::reference(generic_rules().string)
                                          : json_key_except(declared_names, generic_rules().string_rest);
        builder_.define(rule, Expr::sequence({std::move(key), Expr::literal(": "),
                                              schema(additional, path + "/additionalProperties")}));
        extra = Expr::reference(rule);
    }
    const size_t n = members.size();
    std::vector<RuleId> start(n + 1), after(n + 1);
    for (size_t i = 0; i <= n; ++i) start[i] = builder_.add_rule(), after[i] = builder_.add_rule();
    const Expr separator = Expr::literal(", ");
    if (extra) {
        const Expr more = Expr::repeat(Expr::sequence({separator, *extra}), 0, Expr::kUnbounded);
        builder_.define(after[n], more);
        builder_.define(start[n], Expr::optional(Expr::sequence({*extra, more})));
    } else {
        builder_.define(after[n], Expr::empty());
        builder_.define(start[n], Expr::empty());
    }
    for (size_t i = n; i-- > 0;) {
        const Expr member = Expr::reference(members[i].rule), next = Expr::reference(after[i + 1]);
        Expr written_after = Expr::sequence({separator, member, next});
        Expr written_first = Expr::sequence({member, next});
        if (members[i].required) {
            builder_.define(after[i], std::move(written_after));
            builder_.define(start[i], std::move(written_first));
        } else {
            builder_.define(after[i], Expr::choice({std::move(written_after), next}));
            builder_.define(start[i], Expr::choice({std::move(written_first), Expr::reference(start[i + 1])}));
        }
    }
    return Expr::sequence({Expr::literal("{"), Expr::reference(start[0]), Expr::literal("}")});
}

// [P0, P1, ..., I, I, ...]: prefixItems in order, then `items`, the count within minItems..maxItems.
// Without `items`, a tuple takes no further items and a plain array takes any values.
Expr SchemaCompiler::array_schema(const json& node, const std::string& path) {
    const json prefix = node.value("prefixItems", json::array());
    if (!prefix.is_array()) return fail("prefixItems", path, "prefixItems must be an array of schemas");
    for (const char* keyword : {"minItems", "maxItems"}) {
        if (node.contains(keyword) && !node[keyword].is_number_unsigned())
            return fail(keyword, path, std::string(keyword) + " must be a non-negative integer");
    }
    const uint64_t min_items = node.value("minItems", uint64_t{0});
    const uint64_t max_items = node.value("maxItems", uint64_t{Expr::kUnbounded});
    if (max_items < min_items) return fail("maxItems", path, "maxItems is below minItems");
    const json items = node.value("items", json(prefix.empty()));
    const bool takes_more = !(items.is_boolean() && !items.get<bool>());
    if (!takes_more && min_items > prefix.size())
        return fail("minItems", path, "minItems exceeds the number of prefixItems");
    if (min_items > 10000 || (max_items != Expr::kUnbounded && max_items > 10000))
        return fail("maxItems", path, "item counts above 10000 are not supported");

    const Expr separator = Expr::literal(", ");
    const size_t k = prefix.size();
    // The rest, after the k prefix items.
    Expr rest = Expr::empty();
    if (takes_more && (max_items == Expr::kUnbounded || max_items > k)) {
        const RuleId item_rule = builder_.add_rule();
        builder_.define(item_rule, schema(items, path + "/items"));
        const Expr item = Expr::reference(item_rule);
        const uint32_t low = static_cast<uint32_t>(min_items > k ? min_items - k : 0);
        const uint32_t high = max_items == Expr::kUnbounded ? Expr::kUnbounded : static_cast<uint32_t>(max_items - k);
        const Expr more = Expr::sequence({separator, item});
        if (k > 0) {
            rest = Expr::repeat(more, low, high);
        } else {
            const uint32_t tail_high = high == Expr::kUnbounded ? high : high - 1;
            Expr some = Expr::sequence({item, Expr::repeat(more, low > 0 ? low - 1 : 0, tail_high)});
            rest = low > 0 ? std::move(some) : Expr::optional(std::move(some));
        }
    }
    for (size_t i = k; i-- > 0;) {
        if (i >= max_items) {
            rest = Expr::empty();
            continue;
        }
        std::vector<Expr> parts;
        if (i > 0) parts.push_back(separator);
        parts.push_back(schema(prefix[i], path + "/prefixItems/" + std::to_string(i)));
        parts.push_back(std::move(rest));
        Expr written = Expr::sequence(std::move(parts));
        rest = i >= min_items ? Expr::optional(std::move(written)) : std::move(written);
    }
    return Expr::sequence({Expr::literal("["), std::move(rest), Expr::literal("]")});
}

}  // namespace

Result<Grammar, SchemaError> compile_json_schema(const nlohmann::ordered_json& schema) {
    GrammarBuilder builder;
    return SchemaCompiler(schema, builder).compile();
}

Result<RuleId, SchemaError> compile_json_schema_into(GrammarBuilder& builder, const nlohmann::ordered_json& schema) {
    return SchemaCompiler(schema, builder).compile_rules();
}

Grammar json_object_grammar() {
    const nlohmann::ordered_json any_object = {{"type", "object"}};
    return std::move(compile_json_schema(any_object).value());
}

std::string canonical_json(const nlohmann::ordered_json& value) {
    if (value.is_object()) {
        std::string out = "{";
        for (const auto& [key, member] : value.items()) {
            if (out.size() > 1) out += ", ";
            out += nlohmann::ordered_json(key).dump() + ": " + canonical_json(member);
        }
        return out + "}";
    }
    if (value.is_array()) {
        std::string out = "[";
        for (const auto& item : value) {
            if (out.size() > 1) out += ", ";
            out += canonical_json(item);
        }
        return out + "]";
    }
    return value.dump();
}

}  // namespace tempered::grammar
