// `response_format` (chat and completions): free text, any JSON object, or JSON that follows a schema; or
// vLLM's `structured_outputs` (json, json_object, or a GBNF `grammar`, the form the upstream mode sends).
// Parsed and checked for shape here; compiling the schema into a grammar is the server's job, so that
// this layer stays free of grammar/.
#pragma once

#include <string>

#include "api/errors.h"
#include "api/json_fields.h"

namespace tempered::api {

struct ResponseFormat {
    enum class Kind { Text, JsonObject, JsonSchema, Grammar };
    Kind kind = Kind::Text;
    // JsonSchema only: response_format.json_schema's fields.
    std::string name;
    Json schema;  // the JSON Schema, keys in the client's order (properties are generated in that order)
    bool strict = false;
    std::string grammar;  // Grammar only: GBNF text (grammar/gbnf.h)
};

// "json_object" | "json_schema" | "grammar" for the kinds that constrain output; "text" otherwise.
const char* response_format_kind_name(ResponseFormat::Kind kind);

// `field` is body["response_format"] or nullptr; absent or null leaves `out` as text.
FieldError parse_response_format(const Json* field, ResponseFormat& out);
// `field` is body["structured_outputs"] or nullptr: one of {"json": schema}, {"json_object": true},
// {"grammar": "GBNF"}. Called after parse_response_format: a request may not carry both.
FieldError parse_structured_outputs(const Json* field, ResponseFormat& out);

}  // namespace tempered::api
