// JSON Schema -> Grammar for structured output and tool-call arguments.
//
// The grammar produces one canonical layout, Python's `json.dumps` default: `", "` between items,
// `": "` after keys, no other whitespace, object properties in schema order (required ones always present,
// optional ones may be left out, none repeated). Strings may hold any JSON escape or raw UTF-8.
//
// Supported keywords: type (name or array), properties, required, additionalProperties (false, true or a
// schema; absent means no extra properties when `properties` is given, any object when it is not), enum,
// const, items, prefixItems, minItems, maxItems, anyOf, oneOf (only with provably disjoint branches, see
// schema_disjoint.h; otherwise an error naming oneOf and the two branches), $ref to "#", "#/$defs/..." or
// "#/definitions/..." (recursion allowed), $defs/definitions, minLength, maxLength, minimum, maximum,
// exclusiveMinimum, exclusiveMaximum, pattern (see regex.h), format (date, time, date-time, uuid, email).
// Annotations are ignored. Anything else fails with the keyword and the JSON pointer of the schema holding it.
//
// Non-ASCII text may be raw UTF-8 (well-formed only) or \u escapes (no surrogates, so a length counts
// characters as a validator does); enum/const literals are written with raw UTF-8
// (json.dumps(..., ensure_ascii=False)).
//
// Every accepted string validates: each limit below makes the grammar a subset of the schema, never more.
// - Integers are written without fraction or exponent (5, never 5.0); integer bounds are exact.
// - A bounded `number` is written without exponent, with a fraction only after an integer part that stays
//   in bounds with any fraction (under maximum 9.7 no 9.5; when bounded no -0.5).
// - Digits are capped so that a number can always end: at most 19 integer digits, 16 fraction digits and 3
//   exponent digits; a time's fraction of a second has at most 9 digits.
// - A schema without `type`, const, enum or a combinator takes the kind of value its keywords imply
//   (properties/required/additionalProperties: an object; items...: an array; lengths, pattern, format: a
//   string; bounds: a number), where JSON Schema would also let every other kind through.
// - Formats follow fixed regexes (kFormats in json_schema.cpp), narrower than the RFCs: email local parts
//   and domains of letters, digits and `._+-`; times with seconds, `T` and `Z` in upper case.
// - prefixItems without `items` close the tuple; a `required` name missing from `properties` becomes a
//   member of any value after the declared ones.
// - Extra members (additionalProperties) come after the declared ones and never repeat a declared name
//   (object_keys.h: while an extra key still begins like a declared name it is spelled canonically).
// - oneOf is compiled as anyOf, which is exact because its branches must be disjoint.
// - A string with `pattern` or `format` may not also carry minLength/maxLength (an error, not ignored);
//   `.` and negated classes in a pattern never produce control characters other than tab (regex.h).
// - Lengths and item counts above 10000 are errors (the grammar unrolls bounded repetition).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "grammar/grammar.h"

namespace tempered::grammar {

struct SchemaError {
    std::string keyword;  // the offending keyword ("allOf"), or the one whose value is malformed
    std::string pointer;  // JSON pointer of the schema object holding it ("" for the root)
    std::string message;  // human-readable, names both
};

// Takes an ordered_json so that properties keep the schema's order (parse the request's schema text with
// nlohmann::ordered_json; a plain nlohmann::json would have sorted them).
Result<Grammar, SchemaError> compile_json_schema(const nlohmann::ordered_json& schema);

// The same schema as one rule of a larger grammar (a tool call's arguments inside the call syntax): defines
// its rules in `builder` and returns the rule for the whole schema (`schema` need not outlive the call).
Result<RuleId, SchemaError> compile_json_schema_into(GrammarBuilder& builder, const nlohmann::ordered_json& schema);

// `response_format: {"type": "json_object"}`: any JSON object, in the canonical layout.
Grammar json_object_grammar();

// A JSON value written in the canonical layout above.
std::string canonical_json(const nlohmann::ordered_json& value);

}  // namespace tempered::grammar
