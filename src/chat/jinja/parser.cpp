#include "chat/jinja/parser.h"

#include <algorithm>
#include <initializer_list>

#include "chat/jinja/lexer.h"

namespace tempered::jinja {
namespace {

std::string limit_note(int max_depth) { return ": max_depth (" + std::to_string(max_depth) + ")"; }

class Parser {
public:
    Parser(std::vector<Token> tokens, int max_depth) : tokens_(std::move(tokens)), max_depth_(max_depth) {}

    Template run() {
        Template t;
        t.body = parse_body({});
        if (current().type != TokenType::End) {
            fail("Encountered unknown tag '" + current().text + "'.", current().line);
        }
        return t;
    }

private:
    // ---- token helpers -------------------------------------------------------------------------

    const Token& current() const { return tokens_[pos_]; }
    const Token& peek(size_t ahead = 1) const { return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)]; }
    void advance() {
        if (pos_ + 1 < tokens_.size()) ++pos_;
    }
    bool is_op(std::string_view op) const { return current().type == TokenType::Operator && current().text == op; }
    bool is_name(std::string_view name) const { return current().type == TokenType::Name && current().text == name; }
    bool skip_op(std::string_view op) {
        if (!is_op(op)) return false;
        advance();
        return true;
    }
    bool skip_name(std::string_view name) {
        if (!is_name(name)) return false;
        advance();
        return true;
    }
    static std::string describe(const Token& t) {
        switch (t.type) {
            case TokenType::End: return "end of template";
            case TokenType::VarEnd: return "end of print statement";
            case TokenType::BlockEnd: return "end of statement block";
            case TokenType::Text: return "template data";
            case TokenType::String: return "string";
            case TokenType::Int: return "integer";
            case TokenType::Float: return "float";
            default: return "'" + t.text + "'";
        }
    }
    void expect_op(std::string_view op) {
        if (!skip_op(op)) fail("expected token '" + std::string(op) + "', got " + describe(current()), current().line);
    }
    std::string expect_name() {
        if (current().type != TokenType::Name) fail("expected name, got " + describe(current()), current().line);
        std::string name = current().text;
        advance();
        return name;
    }
    void expect_block_end() {
        if (current().type != TokenType::BlockEnd) {
            fail("expected end of statement block, got " + describe(current()), current().line);
        }
        advance();
    }

    struct DepthGuard {
        Parser& p;
        explicit DepthGuard(Parser& parser) : p(parser) {
            if (++p.depth_ > p.max_depth_)
                fail("template nesting too deep" + limit_note(p.max_depth_), p.current().line);
        }
        ~DepthGuard() { --p.depth_; }
    };

    ExprPtr make(ExprKind kind, int line) {
        auto e = std::make_unique<Expr>();
        e->kind = kind;
        e->line = line;
        return e;
    }

    // Bounds the depth of every built node so evaluation and destruction cannot overflow the stack,
    // even for flat-looking chains such as a+a+a+... or x|f|f|f...
    ExprPtr checked(ExprPtr e) {
        int depth = 0;
        const auto visit = [&](const ExprPtr& child) {
            if (child) depth = std::max(depth, child->depth);
        };
        for (const auto& c : e->children) visit(c);
        for (const auto& c : e->args) visit(c);
        for (const auto& kv : e->keyword) visit(kv.second);
        visit(e->star_args);
        visit(e->star_kwargs);
        if (depth + 1 > max_depth_) fail("expression nesting too deep" + limit_note(max_depth_), e->line);
        e->depth = depth + 1;
        return e;
    }

    // ---- statements ----------------------------------------------------------------------------

    // Parses until a block tag whose name is in `ends`; leaves the position on that name token.
    StmtList parse_body(std::initializer_list<std::string_view> ends) {
        StmtList body;
        while (true) {
            const Token& t = current();
            if (t.type == TokenType::End) {
                if (ends.size() != 0) {
                    fail("Unexpected end of template. Jinja was looking for the following tags: '" +
                             std::string(*ends.begin()) + "'.",
                         t.line);
                }
                return body;
            }
            if (t.type == TokenType::Text) {
                auto s = std::make_unique<Stmt>();
                s->kind = StmtKind::Text;
                s->line = t.line;
                s->text = t.text;
                body.push_back(std::move(s));
                advance();
            } else if (t.type == TokenType::VarBegin) {
                advance();
                auto s = std::make_unique<Stmt>();
                s->kind = StmtKind::Output;
                s->line = t.line;
                s->expr = parse_tuple(true, {}, false);
                if (current().type != TokenType::VarEnd) {
                    fail("expected end of print statement, got " + describe(current()), current().line);
                }
                advance();
                body.push_back(std::move(s));
            } else if (t.type == TokenType::BlockBegin) {
                advance();
                if (current().type == TokenType::Name &&
                    std::find(ends.begin(), ends.end(), current().text) != ends.end()) {
                    return body;
                }
                body.push_back(parse_statement());
            } else {
                fail("unexpected " + describe(t), t.line);
            }
        }
    }

    StmtPtr parse_statement() {
        DepthGuard guard(*this);
        const Token& t = current();
        if (t.type != TokenType::Name) fail("tag name expected", t.line);
        const std::string tag = t.text;
        const int line = t.line;
        advance();
        auto s = std::make_unique<Stmt>();
        s->line = line;
        if (tag == "if") return parse_if(std::move(s));
        if (tag == "for") return parse_for(std::move(s));
        if (tag == "set") return parse_set(std::move(s));
        if (tag == "macro") return parse_macro(std::move(s));
        if (tag == "call") return parse_call_block(std::move(s));
        if (tag == "filter") return parse_filter_block(std::move(s));
        if (tag == "with" || tag == "generation") return parse_with(std::move(s), tag);
        if (tag == "break" || tag == "continue") {
            if (loop_depth_ == 0) fail("'" + tag + "' outside of a loop", line);
            s->kind = tag == "break" ? StmtKind::Break : StmtKind::Continue;
            expect_block_end();
            return s;
        }
        if (tag == "include" || tag == "import" || tag == "from" || tag == "extends" || tag == "block") {
            fail("'" + tag + "' is not supported: chat templates cannot load other templates", line);
        }
        fail("Encountered unknown tag '" + tag + "'.", line);
    }

    StmtPtr parse_if(StmtPtr s) {
        s->kind = StmtKind::If;
        ExprPtr condition = parse_tuple(true, {}, false);
        while (true) {
            expect_block_end();
            StmtList body = parse_body({"elif", "else", "endif"});
            s->branches.emplace_back(std::move(condition), std::move(body));
            const std::string tag = current().text;
            advance();
            if (tag == "elif") {
                condition = parse_tuple(true, {}, false);
                continue;
            }
            if (tag == "else") {
                expect_block_end();
                StmtList else_body = parse_body({"endif"});
                advance();
                s->branches.emplace_back(nullptr, std::move(else_body));
            }
            expect_block_end();
            return s;
        }
    }

    std::vector<std::string> parse_target_names(std::initializer_list<std::string_view> end_names) {
        std::vector<std::string> names;
        const bool parenthesized = skip_op("(");
        while (true) {
            names.push_back(expect_name());
            if (!skip_op(",")) break;
            bool at_end = parenthesized ? is_op(")") : false;
            for (auto n : end_names) at_end = at_end || is_name(n) || is_op(n);
            if (at_end) break;
        }
        if (parenthesized) expect_op(")");
        return names;
    }

    StmtPtr parse_for(StmtPtr s) {
        s->kind = StmtKind::For;
        s->targets = parse_target_names({"in"});
        if (!skip_name("in")) fail("expected 'in', got " + describe(current()), current().line);
        s->expr = parse_tuple(false, {"recursive"}, false);
        if (skip_name("if")) s->condition = parse_expression(true);
        if (is_name("recursive")) fail("recursive for loops are not supported", current().line);
        expect_block_end();
        ++loop_depth_;
        s->body = parse_body({"endfor", "else"});
        --loop_depth_;
        if (current().text == "else") {
            advance();
            expect_block_end();
            s->else_body = parse_body({"endfor"});
        }
        advance();
        expect_block_end();
        return s;
    }

    StmtPtr parse_set(StmtPtr s) {
        if (current().type == TokenType::Name && peek().type == TokenType::Operator && peek().text == ".") {
            s->targets.push_back(expect_name());
            advance();
            s->attribute_target = expect_name();
        } else {
            s->targets = parse_target_names({"=", "|"});
        }
        if (skip_op("=")) {
            s->kind = StmtKind::Set;
            s->expr = parse_tuple(true, {}, false);
            expect_block_end();
            return s;
        }
        if (!s->attribute_target.empty() || s->targets.size() != 1) fail("expected '='", current().line);
        s->kind = StmtKind::SetBlock;
        if (is_op("|")) s->expr = parse_filter_chain(nullptr, false);
        expect_block_end();
        s->body = parse_body({"endset"});
        advance();
        expect_block_end();
        return s;
    }

    void parse_params(Stmt& s) {
        expect_op("(");
        while (!is_op(")")) {
            if (!s.params.empty()) expect_op(",");
            if (is_op(")")) break;
            std::string name = expect_name();
            ExprPtr default_value;
            if (skip_op("=")) default_value = parse_expression(true);
            s.params.emplace_back(std::move(name), std::move(default_value));
        }
        advance();
    }

    StmtPtr parse_macro(StmtPtr s) {
        s->kind = StmtKind::Macro;
        s->name = expect_name();
        parse_params(*s);
        expect_block_end();
        const int saved_loop_depth = loop_depth_;
        loop_depth_ = 0;
        s->body = parse_body({"endmacro"});
        loop_depth_ = saved_loop_depth;
        advance();
        expect_block_end();
        return s;
    }

    StmtPtr parse_call_block(StmtPtr s) {
        s->kind = StmtKind::CallBlock;
        if (is_op("(")) parse_params(*s);
        s->expr = parse_expression(true);
        if (s->expr->kind != ExprKind::Call) fail("expected call", s->line);
        expect_block_end();
        s->body = parse_body({"endcall"});
        advance();
        expect_block_end();
        return s;
    }

    StmtPtr parse_filter_block(StmtPtr s) {
        s->kind = StmtKind::FilterBlock;
        s->expr = parse_filter_chain(nullptr, true);
        expect_block_end();
        s->body = parse_body({"endfilter"});
        advance();
        expect_block_end();
        return s;
    }

    StmtPtr parse_with(StmtPtr s, const std::string& tag) {
        s->kind = StmtKind::With;
        while (tag == "with" && current().type != TokenType::BlockEnd) {
            if (!s->params.empty()) expect_op(",");
            std::string name = expect_name();
            expect_op("=");
            s->params.emplace_back(std::move(name), parse_expression(true));
        }
        expect_block_end();
        s->body = parse_body({tag == "with" ? "endwith" : "endgeneration"});
        advance();
        expect_block_end();
        return s;
    }

    // ---- expressions ---------------------------------------------------------------------------

    bool is_tuple_end(std::initializer_list<std::string_view> extra) const {
        const Token& t = current();
        if (t.type == TokenType::VarEnd || t.type == TokenType::BlockEnd || t.type == TokenType::End) return true;
        if (t.type == TokenType::Operator && t.text == ")") return true;
        for (auto name : extra) {
            if (t.type == TokenType::Name && t.text == name) return true;
        }
        return false;
    }

    ExprPtr parse_tuple(bool with_condexpr, std::initializer_list<std::string_view> extra_end, bool explicit_parens) {
        const int line = current().line;
        std::vector<ExprPtr> items;
        bool is_tuple = false;
        while (true) {
            if (!items.empty()) expect_op(",");
            if (is_tuple_end(extra_end)) break;
            items.push_back(parse_expression(with_condexpr));
            if (is_op(",")) {
                is_tuple = true;
            } else {
                break;
            }
        }
        if (!is_tuple) {
            if (!items.empty()) return std::move(items[0]);
            if (!explicit_parens) fail("Expected an expression, got " + describe(current()), current().line);
        }
        auto e = make(ExprKind::Tuple, line);
        e->children = std::move(items);
        return checked(std::move(e));
    }

    ExprPtr parse_expression(bool with_condexpr) {
        DepthGuard guard(*this);
        if (!with_condexpr) return parse_or();
        ExprPtr expr = parse_or();
        while (is_name("if")) {
            const int line = current().line;
            advance();
            ExprPtr condition = parse_or();
            ExprPtr otherwise;
            if (skip_name("else")) otherwise = parse_expression(true);
            auto e = make(ExprKind::Conditional, line);
            e->children.push_back(std::move(condition));
            e->children.push_back(std::move(expr));
            e->children.push_back(std::move(otherwise));
            expr = checked(std::move(e));
        }
        return expr;
    }

    ExprPtr binary(std::string op, ExprPtr left, ExprPtr right, int line) {
        auto e = make(ExprKind::Binary, line);
        e->name = std::move(op);
        e->children.push_back(std::move(left));
        e->children.push_back(std::move(right));
        return checked(std::move(e));
    }

    ExprPtr parse_or() {
        ExprPtr left = parse_and();
        while (is_name("or")) {
            const int line = current().line;
            advance();
            left = binary("or", std::move(left), parse_and(), line);
        }
        return left;
    }

    ExprPtr parse_and() {
        ExprPtr left = parse_not();
        while (is_name("and")) {
            const int line = current().line;
            advance();
            left = binary("and", std::move(left), parse_not(), line);
        }
        return left;
    }

    ExprPtr parse_not() {
        if (is_name("not")) {
            DepthGuard guard(*this);
            const int line = current().line;
            advance();
            auto e = make(ExprKind::Unary, line);
            e->name = "not";
            e->children.push_back(parse_not());
            return checked(std::move(e));
        }
        return parse_compare();
    }

    ExprPtr parse_compare() {
        const int line = current().line;
        ExprPtr first = parse_math1();
        ExprPtr compare;
        while (true) {
            std::string op;
            if (current().type == TokenType::Operator &&
                (current().text == "==" || current().text == "!=" || current().text == "<" || current().text == "<=" ||
                 current().text == ">" || current().text == ">=")) {
                op = current().text;
                advance();
            } else if (is_name("in")) {
                op = "in";
                advance();
            } else if (is_name("not") && peek().type == TokenType::Name && peek().text == "in") {
                op = "not in";
                advance();
                advance();
            } else {
                break;
            }
            if (!compare) {
                compare = make(ExprKind::Compare, line);
                compare->children.push_back(std::move(first));
            }
            compare->ops.push_back(op);
            compare->children.push_back(parse_math1());
            compare = checked(std::move(compare));
        }
        return compare ? std::move(compare) : std::move(first);
    }

    ExprPtr parse_math1() {
        ExprPtr left = parse_concat();
        while (is_op("+") || is_op("-")) {
            const std::string op = current().text;
            const int line = current().line;
            advance();
            left = binary(op, std::move(left), parse_concat(), line);
        }
        return left;
    }

    ExprPtr parse_concat() {
        ExprPtr left = parse_math2();
        while (is_op("~")) {
            const int line = current().line;
            advance();
            left = binary("~", std::move(left), parse_math2(), line);
        }
        return left;
    }

    ExprPtr parse_math2() {
        ExprPtr left = parse_pow();
        while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
            const std::string op = current().text;
            const int line = current().line;
            advance();
            left = binary(op, std::move(left), parse_pow(), line);
        }
        return left;
    }

    ExprPtr parse_pow() {
        ExprPtr left = parse_unary(true);
        while (is_op("**")) {
            const int line = current().line;
            advance();
            left = binary("**", std::move(left), parse_unary(true), line);
        }
        return left;
    }

    ExprPtr parse_unary(bool with_filter) {
        DepthGuard guard(*this);
        ExprPtr node;
        if (is_op("-") || is_op("+")) {
            auto e = make(ExprKind::Unary, current().line);
            e->name = current().text;
            advance();
            e->children.push_back(parse_unary(false));
            node = checked(std::move(e));
        } else {
            node = parse_primary();
        }
        node = parse_postfix(std::move(node));
        if (with_filter) node = parse_filter_expr(std::move(node));
        return node;
    }

    ExprPtr parse_primary() {
        const Token& t = current();
        const int line = t.line;
        if (t.type == TokenType::Name) {
            auto e = make(ExprKind::Literal, line);
            if (t.text == "true" || t.text == "True") {
                e->literal = Value(true);
            } else if (t.text == "false" || t.text == "False") {
                e->literal = Value(false);
            } else if (t.text == "none" || t.text == "None") {
                e->literal = Value::none();
            } else {
                e->kind = ExprKind::Name;
                e->name = t.text;
            }
            advance();
            return e;
        }
        if (t.type == TokenType::String) {
            std::string s;
            while (current().type == TokenType::String) {
                s += current().text;
                advance();
            }
            auto e = make(ExprKind::Literal, line);
            e->literal = Value(std::move(s));
            return e;
        }
        if (t.type == TokenType::Int || t.type == TokenType::Float) {
            auto e = make(ExprKind::Literal, line);
            e->literal = t.type == TokenType::Int ? Value(t.int_value) : Value(t.float_value);
            advance();
            return e;
        }
        if (is_op("(")) {
            advance();
            ExprPtr inner = parse_tuple(true, {}, true);
            expect_op(")");
            return inner;
        }
        if (is_op("[")) {
            advance();
            auto e = make(ExprKind::List, line);
            while (!is_op("]")) {
                if (!e->children.empty()) expect_op(",");
                if (is_op("]")) break;
                e->children.push_back(parse_expression(true));
            }
            advance();
            return checked(std::move(e));
        }
        if (is_op("{")) {
            advance();
            auto e = make(ExprKind::Dict, line);
            while (!is_op("}")) {
                if (!e->children.empty()) expect_op(",");
                if (is_op("}")) break;
                e->children.push_back(parse_expression(true));
                expect_op(":");
                e->children.push_back(parse_expression(true));
            }
            advance();
            return checked(std::move(e));
        }
        fail("unexpected " + describe(t), line);
    }

    ExprPtr parse_postfix(ExprPtr node) {
        while (true) {
            if (is_op(".") || is_op("[")) {
                node = parse_subscript(std::move(node));
            } else if (is_op("(")) {
                node = parse_call(std::move(node));
            } else {
                return node;
            }
        }
    }

    ExprPtr parse_filter_expr(ExprPtr node) {
        while (true) {
            if (is_op("|")) {
                node = parse_filter_chain(std::move(node), false);
            } else if (is_name("is")) {
                node = parse_test(std::move(node));
            } else if (is_op("(")) {
                node = parse_call(std::move(node));
            } else {
                return node;
            }
        }
    }

    ExprPtr parse_subscript(ExprPtr node) {
        const int line = current().line;
        if (skip_op(".")) {
            if (current().type == TokenType::Name) {
                auto e = make(ExprKind::Attribute, line);
                e->name = current().text;
                advance();
                e->children.push_back(std::move(node));
                return checked(std::move(e));
            }
            if (current().type == TokenType::Int) {
                auto index = make(ExprKind::Literal, line);
                index->literal = Value(current().int_value);
                advance();
                auto e = make(ExprKind::Index, line);
                e->children.push_back(std::move(node));
                e->children.push_back(std::move(index));
                return checked(std::move(e));
            }
            fail("expected name or number", line);
        }
        advance();  // '['
        std::vector<ExprPtr> args;
        while (!is_op("]")) {
            if (!args.empty()) expect_op(",");
            args.push_back(parse_subscribed(node, line));
            if (args.back()->kind == ExprKind::Slice) {
                expect_op("]");
                return checked(std::move(args.back()));
            }
        }
        advance();
        if (args.empty()) fail("expected subscript expression", line);
        auto e = make(ExprKind::Index, line);
        e->children.push_back(std::move(node));
        if (args.size() == 1) {
            e->children.push_back(std::move(args[0]));
        } else {
            auto tuple = make(ExprKind::Tuple, line);
            tuple->children = std::move(args);
            e->children.push_back(checked(std::move(tuple)));
        }
        return checked(std::move(e));
    }

    // One subscript argument; a slice takes ownership of `object` and is returned as the Slice node.
    ExprPtr parse_subscribed(ExprPtr& object, int line) {
        ExprPtr start;
        if (!is_op(":")) {
            start = parse_expression(true);
            if (!is_op(":")) return start;
        }
        advance();  // ':'
        ExprPtr stop, step;
        if (!is_op("]") && !is_op(",") && !is_op(":")) stop = parse_expression(true);
        if (skip_op(":")) {
            if (!is_op("]") && !is_op(",")) step = parse_expression(true);
        }
        auto e = make(ExprKind::Slice, line);
        e->children.push_back(std::move(object));
        e->children.push_back(std::move(start));
        e->children.push_back(std::move(stop));
        e->children.push_back(std::move(step));
        return e;
    }

    void parse_call_args(Expr& e) {
        expect_op("(");
        bool first = true;
        while (!is_op(")")) {
            if (!first) expect_op(",");
            first = false;
            if (is_op(")")) break;
            if (skip_op("*")) {
                e.star_args = parse_expression(true);
            } else if (skip_op("**")) {
                e.star_kwargs = parse_expression(true);
            } else if (current().type == TokenType::Name && peek().type == TokenType::Operator && peek().text == "=") {
                std::string key = current().text;
                advance();
                advance();
                e.keyword.emplace_back(std::move(key), parse_expression(true));
            } else {
                if (!e.keyword.empty()) fail("positional argument follows keyword argument", current().line);
                e.args.push_back(parse_expression(true));
            }
        }
        advance();
    }

    ExprPtr parse_call(ExprPtr callee) {
        auto e = make(ExprKind::Call, current().line);
        e->children.push_back(std::move(callee));
        parse_call_args(*e);
        return checked(std::move(e));
    }

    ExprPtr parse_filter_chain(ExprPtr node, bool start_inline) {
        while (is_op("|") || start_inline) {
            if (!start_inline) advance();
            start_inline = false;
            auto e = make(ExprKind::Filter, current().line);
            e->name = expect_name();
            while (skip_op(".")) {
                e->name += '.';
                e->name += expect_name();
            }
            e->children.push_back(std::move(node));
            if (is_op("(")) parse_call_args(*e);
            node = checked(std::move(e));
        }
        return node;
    }

    ExprPtr parse_test(ExprPtr node) {
        auto e = make(ExprKind::Test, current().line);
        advance();  // 'is'
        e->negated = skip_name("not");
        e->name = expect_name();
        while (skip_op(".")) {
            e->name += '.';
            e->name += expect_name();
        }
        e->children.push_back(std::move(node));
        const Token& t = current();
        if (is_op("(")) {
            parse_call_args(*e);
        } else if ((t.type == TokenType::Name || t.type == TokenType::String || t.type == TokenType::Int ||
                    t.type == TokenType::Float || is_op("[") || is_op("{")) &&
                   !is_name("else") && !is_name("or") && !is_name("and")) {
            if (is_name("is")) fail("You cannot chain multiple tests with is", t.line);
            e->args.push_back(parse_postfix(parse_primary()));
        }
        return checked(std::move(e));
    }

    std::vector<Token> tokens_;
    size_t pos_ = 0;
    int max_depth_;
    int depth_ = 0;
    int loop_depth_ = 0;
};

}  // namespace

Template parse_template(std::string_view source, int max_depth) { return Parser(tokenize(source), max_depth).run(); }

}  // namespace tempered::jinja
