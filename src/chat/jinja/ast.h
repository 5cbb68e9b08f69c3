// AST of a parsed template: expressions and statements as plain tagged nodes.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja/value.h"

namespace tempered::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using StmtList = std::vector<StmtPtr>;

enum class ExprKind : uint8_t {
    Literal,      // literal
    Name,         // name
    List,         // children = items
    Tuple,        // children = items
    Dict,         // children = key, value, key, value, ...
    Attribute,    // children[0] = object, name = attribute
    Index,        // children[0] = object, children[1] = index
    Slice,        // children[0] = object, children[1..3] = start, stop, step (may be null)
    Call,         // children[0] = callee, args = positional, keyword = named
    Filter,       // children[0] = value (null in a filter block), name, args, keyword
    Test,         // children[0] = value, name, args, keyword, negated
    Unary,        // name = "-", "+", "not"; children[0] = operand
    Binary,       // name = operator ("+", "-", "*", "/", "//", "%", "**", "~", "and", "or")
    Compare,      // children[0] = first operand; ops[i] applies to children[i], children[i + 1]
    Conditional,  // children = condition, then, else (else may be null)
};

struct Expr {
    ExprKind kind;
    int line = 0;
    int depth = 1;  // height of this subtree, bounded by the parser
    std::string name;
    Value literal;
    std::vector<ExprPtr> children;
    std::vector<ExprPtr> args;
    std::vector<std::pair<std::string, ExprPtr>> keyword;
    ExprPtr star_args;    // *args in a call
    ExprPtr star_kwargs;  // **kwargs in a call
    std::vector<std::string> ops;
    bool negated = false;
};

enum class StmtKind : uint8_t {
    Text,         // text
    Output,       // expr
    If,           // branches: (condition, body); a null condition is the else branch
    For,          // targets, expr = iterable, condition = loop filter, body, else_body
    Set,          // targets (or attribute target), expr
    SetBlock,     // targets, body, filter (optional)
    Macro,        // name, params (name, default), body
    CallBlock,    // expr = call, params = caller params, body
    FilterBlock,  // filter chain in expr (innermost value null), body
    With,         // assignments in params (name, value), body
    Break,
    Continue,
};

struct Stmt {
    StmtKind kind;
    int line = 0;
    std::string text;
    ExprPtr expr;
    ExprPtr condition;
    std::vector<std::pair<ExprPtr, StmtList>> branches;
    std::vector<std::string> targets;
    std::string attribute_target;  // {% set ns.attr = ... %}: targets[0] = ns, this = attr
    StmtList body;
    StmtList else_body;
    std::string name;
    std::vector<std::pair<std::string, ExprPtr>> params;
};

struct Template {
    StmtList body;
};

}  // namespace tempered::jinja
