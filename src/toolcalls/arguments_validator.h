// Checks a JSON instance against a JSON Schema, with JSON Schema's own semantics (Python `jsonschema`,
// draft 2020-12), over the keywords grammar/json_schema.h supports. The grammar is not used for this: it
// accepts one canonical layout and a subset of the valid values (see its limits), while a check of what
// a model wrote must say exactly whether it is valid.
//
// Where the two differ on purpose: an absent additionalProperties allows extra members here (as in JSON
// Schema) although the grammar writes none; `format` is an annotation here, as in `jsonschema` without a
// FormatChecker; `pattern` is an ECMAScript regex searched anywhere in the string (as `re.search`).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace tempered::toolcalls {

// The first violation found ("at '/city': expected type string"), or nullopt when `instance` is valid.
// `schema` is the root (where "#" references resolve).
std::optional<std::string> find_schema_violation(const nlohmann::ordered_json& schema,
                                                 const nlohmann::ordered_json& instance);

}  // namespace tempered::toolcalls
