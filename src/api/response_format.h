// `response_format` (chat and completions): free text, any JSON object, or JSON that follows a schema.
// Parsed and checked for shape here; compiling the schema into a grammar is the server's job, so that
// this layer stays free of grammar/.
#pragma once

#include <string>

#include "api/errors.h"
#include "api/json_fields.h"

namespace tempered::api {

struct ResponseFormat {
    enum class Kind { Text, JsonObject, JsonSchema };
    Kind kind = Kind::Text;
    // JsonSchema only: response_format.json_schema's fields.
    std::string name;
    Json schema;  // the JSON Schema, keys in the client's order (properties are generated in that order)
    bool strict = false;
};

// "json_object" | "json_schema" for the kinds that constrain output; "text" otherwise.
const char* response_format_kind_name(ResponseFormat::Kind kind);

// `field` is body["response_format"] or nullptr; absent or null leaves `out` as text.
FieldError parse_response_format(const Json* field, ResponseFormat& out);

}  // namespace tempered::api
