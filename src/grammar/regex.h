// A JSON-Schema `pattern` (an ECMA-262 regex subset) as a grammar Expr over the JSON-encoded string body.
//
// Supported: literals (ASCII and UTF-8), escapes (\. \\ \/ \n \t \r ...), `.`, classes `[...]` and
// `[^...]` with ASCII ranges, \d \w \s \D \W \S (ASCII classes as in ECMA-262, where Python's re would
// also match non-ASCII digits and letters), groups `(...)` and `(?:...)`, alternation, `? * +`,
// `{m}`, `{m,}`, `{m,n}` (lazy `?` suffixes accepted: the language is the same), `^` at the start and `$`
// at the end. Without `^` (`$`) any prefix (suffix) is allowed, as JSON Schema patterns search.
// The Expr matches the bytes between the quotes: `"` and `\` appear escaped, control characters as their
// JSON escapes. `.` and negated classes match printable ASCII, the escaped quote and backslash, `\t`, and
// any non-ASCII UTF-8 character; other control characters are never generated (a subset, never more).
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"
#include "grammar/grammar.h"

namespace tempered::grammar {

Result<Expr> compile_pattern(std::string_view pattern);

// One character inside a JSON string: unescaped printable ASCII except `"` and `\`, an escape sequence
// (\u escapes outside the surrogate range D800-DFFF),
// or one well-formed UTF-8 encoded non-ASCII character (no overlong forms, no surrogates).
Expr json_string_char();

}  // namespace tempered::grammar
