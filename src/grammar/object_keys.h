// A JSON object key (a JSON string with its quotes) other than a set of declared names: the key of an
// extra member under `additionalProperties`, which must not repeat a declared property.
//
// The declared names are matched in their canonical spelling (json.dumps: raw UTF-8, the short escapes
// \" \\ \b \f \n \r \t, and \u00xx for the other control characters). While the key written so far is
// still a prefix of some declared name's spelling it must itself be spelled canonically, so two
// different spellings of one character can never hide a declared name; once it has left every declared
// name, any JSON string character may follow. A key may leave a declared name inside a \u00xx escape only
// at the `u` (a narrow restriction: it matters only for names holding control characters).
#pragma once

#include <string>
#include <vector>

#include "grammar/grammar.h"

namespace tempered::grammar {

// `names` are decoded property names; `free_string_rest` is a rule for "any JSON string characters, then
// the closing quote", referenced wherever the key has left every declared name.
Expr json_key_except(const std::vector<std::string>& names, RuleId free_string_rest);

}  // namespace tempered::grammar
