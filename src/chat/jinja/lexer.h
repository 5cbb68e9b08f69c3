// Lexer: splits template source into text and tag tokens the way jinja2's lexer does with
// trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False: whitespace control ('-', '+'),
// comments and {% raw %} are resolved here, so the parser only sees text and expression tokens.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tempered::jinja {

enum class TokenType : uint8_t {
    Text,        // literal template text, whitespace control already applied
    VarBegin,    // {{
    VarEnd,      // }}
    BlockBegin,  // {%
    BlockEnd,    // %}
    Name,
    String,  // text holds the unescaped value
    Int,
    Float,
    Operator,  // text holds the operator: "+", "//", "==", "(", ...
    End,
};

struct Token {
    TokenType type = TokenType::End;
    std::string text;
    int line = 1;
    int64_t int_value = 0;
    double float_value = 0.0;
};

// Throws TemplateError on malformed input (unterminated tags or strings, unbalanced brackets).
std::vector<Token> tokenize(std::string_view source);

}  // namespace tempered::jinja
