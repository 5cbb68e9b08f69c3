// Helpers for the grammar tests: compile a schema from text, and ask whether a whole string matches.
#pragma once

#include <gtest/gtest.h>

#include <string_view>

#include "grammar/json_schema.h"
#include "grammar/matcher.h"

namespace tempered::grammar::testing {

inline bool matches(const Grammar& grammar, std::string_view text) {
    Matcher matcher(grammar);
    return matcher.accept_bytes(text) && matcher.is_complete();
}

// The bytes before the first rejected one are a viable prefix: true when every prefix is accepted.
inline bool is_viable_prefix(const Grammar& grammar, std::string_view text) {
    Matcher matcher(grammar);
    return matcher.accept_bytes(text);
}

inline Grammar schema_grammar(std::string_view schema_text) {
    auto grammar = compile_json_schema(nlohmann::ordered_json::parse(schema_text));
    EXPECT_TRUE(grammar) << schema_text << ": " << (grammar ? "" : grammar.error().message);
    return grammar ? std::move(grammar.value()) : Grammar{};
}

inline SchemaError schema_error(std::string_view schema_text) {
    auto grammar = compile_json_schema(nlohmann::ordered_json::parse(schema_text));
    EXPECT_FALSE(grammar) << schema_text << " compiled";
    return grammar ? SchemaError{} : grammar.error();
}

}  // namespace tempered::grammar::testing
