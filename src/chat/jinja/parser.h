// Parser: tokens -> AST, following jinja2's grammar and operator precedence.
#pragma once

#include <string_view>

#include "chat/jinja/ast.h"

namespace tempered::jinja {

// Throws TemplateError on syntax errors, unsupported tags (include/import/extends: no file access)
// and on nesting deeper than max_depth (so hostile input cannot overflow the stack).
Template parse_template(std::string_view source, int max_depth);

}  // namespace tempered::jinja
