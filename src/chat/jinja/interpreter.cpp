#include "chat/jinja/interpreter.h"

#include <algorithm>

#include "chat/jinja/parser.h"

namespace tempered::jinja {
namespace {

// "…: max_depth (256)": what the operator sees names the limit that stopped the render.
std::string limit_note(const char* name, size_t value) { return cat({": ", name, " (", std::to_string(value), ")"}); }

struct DepthGuard {
    int& depth;
    // `max` may be a multiple of max_depth (native frames); the message names the limit itself.
    DepthGuard(int& d, int max, int max_depth, int line) : depth(d) {
        if (++depth > max)
            fail_limit("maximum recursion depth exceeded" + limit_note("max_depth", static_cast<size_t>(max_depth)),
                       line);
    }
    ~DepthGuard() { --depth; }
};

std::shared_ptr<Scope> child_scope(const std::shared_ptr<Scope>& parent) {
    auto scope = std::make_shared<Scope>();
    scope->parent = parent;
    return scope;
}

// The interpreter rendering on this thread, for the charges of helpers that do not take it.
thread_local Interpreter* active_interpreter = nullptr;

struct ActiveInterpreter {
    Interpreter* previous;
    explicit ActiveInterpreter(Interpreter* interpreter) : previous(active_interpreter) {
        active_interpreter = interpreter;
    }
    ~ActiveInterpreter() { active_interpreter = previous; }
};

}  // namespace

size_t comparison_cost(const std::string& op, const Value& left, const Value& right) {
    if (op == "in" || op == "not in") return right.is_dict() ? left.approx_bytes() : right.approx_bytes();
    return std::min(left.approx_bytes(), right.approx_bytes());
}

void charge_active_render(size_t bytes) {
    if (active_interpreter) active_interpreter->charge(bytes);
}

void charge_character_split(size_t bytes) {
    if (active_interpreter) active_interpreter->charge(bytes * sizeof(std::string));
}

Interpreter::Interpreter(const JinjaOptions& options) : options_(options), root_(std::make_shared<Scope>()) {
    install_globals(*root_);
}

Interpreter::~Interpreter() {
    for (auto& ns : namespaces_) *ns = DictData();
    root_->vars.clear();
}

std::shared_ptr<DictData> Interpreter::new_namespace() {
    namespaces_.push_back(std::make_shared<DictData>());
    return namespaces_.back();
}

std::string Interpreter::render(const Template& tmpl, const Value& context) {
    auto top = child_scope(root_);
    if (context.is_dict()) {
        for (const auto& [key, value] : context.dict_data().entries()) {
            if (key.is_string()) top->vars[key.as_string()] = value;
        }
    }
    std::string out;
    const ActiveInterpreter active(this);
    started_ = std::chrono::steady_clock::now();
    exec(tmpl.body, top, out);
    top->vars.clear();
    return out;
}

void Interpreter::count_iterations(size_t n) {
    iterations_ += n;
    if (iterations_ > options_.limits.max_loop_iterations)
        fail_limit("loop iteration limit exceeded" +
                   limit_note("max_loop_iterations", options_.limits.max_loop_iterations));
}

void Interpreter::check_size(size_t bytes) const {
    if (bytes > options_.limits.max_output_bytes) fail_output_size(options_.limits.max_output_bytes);
}

void Interpreter::charge(size_t bytes) {
    // Saturating: a product such as size * times may not fit size_t and must still fail.
    work_bytes_ = bytes > SIZE_MAX - work_bytes_ ? SIZE_MAX : work_bytes_ + bytes;
    if (work_bytes_ > options_.limits.max_work_bytes)
        fail_limit("template work limit exceeded" + limit_note("max_work_bytes", options_.limits.max_work_bytes));
}

void Interpreter::count_step() {
    if (++steps_ > options_.limits.max_render_steps)
        fail_limit("render step limit exceeded" + limit_note("max_render_steps", options_.limits.max_render_steps));
    // Reading the clock every step would cost more than most steps; every 4096th is within microseconds.
    if (steps_ % 4096 == 0) check_render_time();
}

void Interpreter::check_render_time() const {
    const auto limit = options_.limits.max_render_time;
    if (std::chrono::steady_clock::now() - started_ <= limit) return;
    fail_limit(cat({"render time limit exceeded: max_render_time (", std::to_string(limit.count()), " ms)"}));
}

void Interpreter::append(std::string& out, std::string_view text) {
    check_size(out.size() + text.size());
    // Copying is work: output captured by {% set %}, a macro or a filter block is thrown away and rebuilt on
    // every iteration of a loop, so max_output_bytes alone does not bound it.
    charge(text.size());
    out += text;
}

std::vector<Value> Interpreter::iterate(const Value& value) {
    charge(value.approx_bytes());
    switch (value.kind()) {
        case Kind::Undefined: return {};
        case Kind::List: return value.items();
        case Kind::Iterator: {
            ListData& state = value.iterator_state();
            std::vector<Value> rest(state.items.begin() + static_cast<std::ptrdiff_t>(state.cursor), state.items.end());
            state.cursor = state.items.size();
            return rest;
        }
        case Kind::Dict: {
            std::vector<Value> keys;
            keys.reserve(value.dict_data().size());
            for (const auto& [k, v] : value.dict_data().entries()) keys.push_back(k);
            return keys;
        }
        case Kind::String: {
            // One Value per character: charged before they exist, as a long string would need many times its size.
            charge(value.as_string().size() * sizeof(Value));
            std::vector<Value> chars;
            for (auto& ch : utf8_chars(value.as_string())) chars.emplace_back(std::move(ch));
            return chars;
        }
        default: fail("'" + value.type_name() + "' object is not iterable");
    }
}

Value Interpreter::call(const Value& callee, CallArgs& args) {
    if (callee.is_undefined()) fail_undefined(callee);
    if (!callee.is_function()) fail("'" + callee.type_name() + "' object is not callable");
    return callee.function_data().call(*this, args);
}

Value Interpreter::lookup(const std::string& name, const std::shared_ptr<Scope>& scope) const {
    for (const Scope* s = scope.get(); s; s = s->parent.get()) {
        auto it = s->vars.find(name);
        if (it != s->vars.end()) return it->second;
    }
    return Value::undefined("'" + name + "' is undefined");
}

// ---- expressions -----------------------------------------------------------------------------------

void Interpreter::eval_args(const Expr& e, const std::shared_ptr<Scope>& scope, CallArgs& args) {
    for (const auto& a : e.args) args.positional.push_back(eval(*a, scope));
    for (const auto& [k, v] : e.keyword) args.keyword.emplace_back(k, eval(*v, scope));
    if (e.star_args) {
        for (auto& v : iterate(eval(*e.star_args, scope))) args.positional.push_back(std::move(v));
    }
    if (e.star_kwargs) {
        const Value kw = eval(*e.star_kwargs, scope);
        if (!kw.is_dict()) fail("argument after ** must be a mapping, not " + kw.type_name());
        charge(kw.approx_bytes());
        for (const auto& [k, v] : kw.dict_data().entries()) {
            if (!k.is_string()) fail("keywords must be strings");
            args.keyword.emplace_back(k.as_string(), v);
        }
    }
}

Value Interpreter::eval_call(const Expr& e, const std::shared_ptr<Scope>& scope, const Value* caller) {
    const Value callee = eval(*e.children[0], scope);
    CallArgs args;
    eval_args(e, scope, args);
    if (caller) args.keyword.emplace_back("caller", *caller);
    return call(callee, args);
}

Value Interpreter::eval_filter(const Expr& e, const std::shared_ptr<Scope>& scope) {
    Value input;
    if (e.children[0]) {
        input = eval(*e.children[0], scope);
    } else if (filter_block_input_) {
        input = *filter_block_input_;
    }
    CallArgs args;
    eval_args(e, scope, args);
    return apply_filter(*this, e.name, input, args);
}

Value Interpreter::eval(const Expr& e, const std::shared_ptr<Scope>& scope) {
    try {
        DepthGuard guard(frames_, 4 * options_.limits.max_depth, options_.limits.max_depth, e.line);
        count_step();
        switch (e.kind) {
            case ExprKind::Literal: return e.literal;
            case ExprKind::Name: return lookup(e.name, scope);
            case ExprKind::List:
            case ExprKind::Tuple: {
                std::vector<Value> items;
                items.reserve(e.children.size());
                for (const auto& c : e.children) items.push_back(eval(*c, scope));
                Value list = Value::list(std::move(items), e.kind == ExprKind::Tuple);
                check_size(list.approx_bytes());
                return list;
            }
            case ExprKind::Dict: {
                auto data = std::make_shared<DictData>();
                for (size_t i = 0; i + 1 < e.children.size(); i += 2) {
                    Value key = eval(*e.children[i], scope);
                    if (key.is_list() && !key.is_tuple()) fail("unhashable type: 'list'");
                    if (key.is_dict()) fail("unhashable type: 'dict'");
                    data->set(key, eval(*e.children[i + 1], scope));
                }
                Value dict = Value::dict(std::move(data));
                check_size(dict.approx_bytes());
                return dict;
            }
            case ExprKind::Attribute: return get_attribute(eval(*e.children[0], scope), e.name);
            case ExprKind::Index: {
                const Value object = eval(*e.children[0], scope);
                if (object.is_string()) charge(2 * object.as_string().size());  // s[i]: two scans, length and i
                return get_item(object, eval(*e.children[1], scope));
            }
            case ExprKind::Slice: {
                const Value object = eval(*e.children[0], scope);
                const auto part = [&](size_t i) { return e.children[i] ? eval(*e.children[i], scope) : Value::none(); };
                Value slice = get_slice(object, part(1), part(2), part(3));
                if (slice.is_list()) charge(slice.items().size() * sizeof(Value));  // strings pay as they split
                return slice;
            }
            case ExprKind::Call: return eval_call(e, scope, nullptr);
            case ExprKind::Filter: return eval_filter(e, scope);
            case ExprKind::Test: {
                const Value value = eval(*e.children[0], scope);
                CallArgs args;
                eval_args(e, scope, args);
                return Value(apply_test(*this, e.name, value, args) != e.negated);
            }
            case ExprKind::Unary: {
                const Value v = eval(*e.children[0], scope);
                if (e.name == "not") return Value(!v.truthy());
                if (v.is_undefined()) fail_undefined(v);
                if (!v.is_number()) fail("bad operand type for unary " + e.name + ": '" + v.type_name() + "'");
                if (e.name == "+") return v.is_float() ? v : Value(v.as_int());
                if (v.is_float()) return Value(-v.as_double());
                if (v.as_int() == INT64_MIN) fail("integer overflow");
                return Value(-v.as_int());
            }
            case ExprKind::Binary: {
                if (e.name == "and" || e.name == "or") {
                    Value left = eval(*e.children[0], scope);
                    if (left.truthy() == (e.name == "or")) return left;
                    return eval(*e.children[1], scope);
                }
                const Value left = eval(*e.children[0], scope);
                const Value right = eval(*e.children[1], scope);
                return binary_op(e.name, left, right, *this);
            }
            case ExprKind::Compare: {
                Value left = eval(*e.children[0], scope);
                for (size_t i = 0; i < e.ops.size(); ++i) {
                    Value right = eval(*e.children[i + 1], scope);
                    const std::string& op = e.ops[i];
                    charge(comparison_cost(op, left, right));
                    bool result;
                    if (op == "==")
                        result = values_equal(left, right);
                    else if (op == "!=")
                        result = !values_equal(left, right);
                    else if (op == "in")
                        result = contains(right, left);
                    else if (op == "not in")
                        result = !contains(right, left);
                    else {
                        const int c = compare_values(left, right, op.c_str());
                        result = op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0;
                    }
                    if (!result) return Value(false);
                    left = std::move(right);
                }
                return Value(true);
            }
            case ExprKind::Conditional: {
                if (eval(*e.children[0], scope).truthy()) return eval(*e.children[1], scope);
                if (e.children[2]) return eval(*e.children[2], scope);
                return Value::undefined("the inline if-expression evaluated to false and no else section was defined.");
            }
        }
    } catch (TemplateError& error) {
        if (error.line == 0) error.line = e.line;
        throw;
    }
    return Value();
}

// ---- statements ------------------------------------------------------------------------------------

Flow Interpreter::exec(const StmtList& body, const std::shared_ptr<Scope>& scope, std::string& out) {
    for (const auto& s : body) {
        const Flow flow = exec_stmt(*s, scope, out);
        if (flow != Flow::Normal) return flow;
    }
    return Flow::Normal;
}

void Interpreter::assign_targets(const std::vector<std::string>& targets, const Value& value, Scope& scope) {
    if (targets.size() == 1) {
        scope.vars[targets[0]] = value;
        return;
    }
    std::vector<Value> items = iterate(value);
    if (items.size() != targets.size()) {
        fail(items.size() > targets.size()
                 ? "too many values to unpack (expected " + std::to_string(targets.size()) + ")"
                 : "not enough values to unpack (expected " + std::to_string(targets.size()) + ", got " +
                       std::to_string(items.size()) + ")");
    }
    for (size_t i = 0; i < targets.size(); ++i) scope.vars[targets[i]] = items[i];
}

Flow Interpreter::exec_for(const Stmt& s, const std::shared_ptr<Scope>& scope, std::string& out) {
    std::vector<Value> items = iterate(eval(*s.expr, scope));
    if (s.condition) {
        std::vector<Value> kept;
        for (auto& item : items) {
            count_iterations();
            auto filter_scope = child_scope(scope);
            assign_targets(s.targets, item, *filter_scope);
            if (eval(*s.condition, filter_scope).truthy()) kept.push_back(std::move(item));
        }
        items = std::move(kept);
    }
    if (items.empty()) return exec(s.else_body, scope, out);

    const auto all = std::make_shared<std::vector<Value>>(std::move(items));
    const auto changed_state = std::make_shared<std::vector<Value>>();
    const size_t n = all->size();
    for (size_t i = 0; i < n; ++i) {
        count_iterations();
        auto iteration = child_scope(scope);
        assign_targets(s.targets, (*all)[i], *iteration);
        iteration->vars["loop"] = Value::loop(std::make_shared<LoopData>(LoopData{all, i, changed_state}));
        const Flow flow = exec(s.body, iteration, out);
        if (flow == Flow::Break) break;
    }
    return Flow::Normal;
}

void Interpreter::exec_set(const Stmt& s, const std::shared_ptr<Scope>& scope) {
    const Value value = eval(*s.expr, scope);
    if (!s.attribute_target.empty()) {
        const Value target = lookup(s.targets[0], scope);
        if (!target.is_namespace()) fail("cannot assign attribute on non-namespace object");
        target.mutable_dict_data().set(Value(s.attribute_target), value);
        return;
    }
    assign_targets(s.targets, value, *scope);
}

Value Interpreter::make_macro(const Stmt& s, const std::shared_ptr<Scope>& scope) {
    std::weak_ptr<Scope> definition_scope = scope;
    const Stmt* macro = &s;
    return Value::function(s.name, [this, macro, definition_scope](Interpreter&, CallArgs& args) {
        DepthGuard guard(macro_depth_, options_.limits.max_depth, options_.limits.max_depth, macro->line);
        auto parent = definition_scope.lock();
        auto frame = child_scope(parent ? parent : root_);
        std::vector<bool> bound(macro->params.size(), false);
        size_t next_positional = 0;
        for (size_t i = 0; i < macro->params.size() && next_positional < args.positional.size(); ++i) {
            frame->vars[macro->params[i].first] = args.positional[next_positional++];
            bound[i] = true;
        }
        std::vector<Value> varargs(args.positional.begin() + static_cast<std::ptrdiff_t>(next_positional),
                                   args.positional.end());
        auto kwargs = std::make_shared<DictData>();
        for (const auto& [key, value] : args.keyword) {
            bool matched = false;
            for (size_t i = 0; i < macro->params.size(); ++i) {
                if (macro->params[i].first == key) {
                    if (bound[i]) fail("macro '" + macro->name + "' got multiple values for argument '" + key + "'");
                    frame->vars[key] = value;
                    bound[i] = matched = true;
                }
            }
            if (matched) continue;
            if (key == "caller") {
                frame->vars["caller"] = value;
            } else {
                kwargs->set(Value(key), value);
            }
        }
        for (size_t i = 0; i < macro->params.size(); ++i) {
            if (bound[i]) continue;
            const auto& [name, default_value] = macro->params[i];
            frame->vars[name] = default_value ? eval(*default_value, frame)
                                              : Value::undefined("parameter '" + name + "' was not provided");
        }
        frame->vars["varargs"] = Value::list(std::move(varargs), true);
        frame->vars["kwargs"] = Value::dict(std::move(kwargs));
        std::string out;
        exec(macro->body, frame, out);
        return Value(std::move(out));
    });
}

Flow Interpreter::exec_stmt(const Stmt& s, const std::shared_ptr<Scope>& scope, std::string& out) {
    try {
        DepthGuard guard(frames_, 4 * options_.limits.max_depth, options_.limits.max_depth, s.line);
        count_step();
        switch (s.kind) {
            case StmtKind::Text: append(out, s.text); return Flow::Normal;
            case StmtKind::Output: {
                const Value v = eval(*s.expr, scope);
                if (v.is_string()) {
                    append(out, v.as_string());
                } else {
                    append(out, to_str(v));
                }
                return Flow::Normal;
            }
            case StmtKind::If:
                for (const auto& [condition, body] : s.branches) {
                    if (!condition || eval(*condition, scope).truthy()) return exec(body, scope, out);
                }
                return Flow::Normal;
            case StmtKind::For: return exec_for(s, scope, out);
            case StmtKind::Set: exec_set(s, scope); return Flow::Normal;
            case StmtKind::SetBlock: {
                std::string captured;
                exec(s.body, child_scope(scope), captured);
                Value value(std::move(captured));
                if (s.expr) {
                    filter_block_input_ = &value;
                    value = eval(*s.expr, scope);
                    filter_block_input_ = nullptr;
                }
                scope->vars[s.targets[0]] = value;
                return Flow::Normal;
            }
            case StmtKind::Macro: scope->vars[s.name] = make_macro(s, scope); return Flow::Normal;
            case StmtKind::CallBlock: {
                const Stmt* block = &s;
                std::weak_ptr<Scope> weak_scope = scope;
                Value caller = Value::function("caller", [this, block, weak_scope](Interpreter&, CallArgs& args) {
                    auto parent = weak_scope.lock();
                    auto frame = child_scope(parent ? parent : root_);
                    for (size_t i = 0; i < block->params.size(); ++i) {
                        const auto& [name, default_value] = block->params[i];
                        const Value* given = args.get(i, name);
                        frame->vars[name] = given ? *given : default_value ? eval(*default_value, frame) : Value();
                    }
                    std::string body;
                    exec(block->body, frame, body);
                    return Value(std::move(body));
                });
                append(out, to_str(eval_call(*s.expr, scope, &caller)));
                return Flow::Normal;
            }
            case StmtKind::FilterBlock: {
                std::string captured;
                exec(s.body, child_scope(scope), captured);
                const Value input(std::move(captured));
                filter_block_input_ = &input;
                const Value result = eval(*s.expr, scope);
                filter_block_input_ = nullptr;
                append(out, to_str(result));
                return Flow::Normal;
            }
            case StmtKind::With: {
                auto inner = child_scope(scope);
                for (const auto& [name, value] : s.params) inner->vars[name] = eval(*value, scope);
                return exec(s.body, inner, out);
            }
            case StmtKind::Break: return Flow::Break;
            case StmtKind::Continue: return Flow::Continue;
        }
    } catch (TemplateError& error) {
        if (error.line == 0) error.line = s.line;
        throw;
    }
    return Flow::Normal;
}

}  // namespace tempered::jinja

namespace tempered {
namespace {

// Runs one step of parsing or rendering, turning what the interpreter throws into an error.
template <class Step>
auto template_errors_as_result(Step&& step) -> Result<decltype(step()), JinjaRenderError> {
    try {
        return step();
    } catch (const jinja::TemplateError& error) {
        return JinjaRenderError{"template error at line " + std::to_string(error.line) + ": " + error.message,
                                error.cause == jinja::ErrorCause::Raised, error.cause == jinja::ErrorCause::Limit};
    } catch (const std::bad_alloc&) {
        return JinjaRenderError{"template error: out of memory", false, true};
    } catch (const std::exception& error) {
        return JinjaRenderError{std::string("template error: ") + error.what()};
    }
}

}  // namespace

Result<ParsedJinja> ParsedJinja::parse(std::string_view template_source, int max_depth) {
    auto program = template_errors_as_result(
        [&] { return std::make_shared<const jinja::Template>(jinja::parse_template(template_source, max_depth)); });
    if (!program) return Error{program.error().message};
    return ParsedJinja(std::move(program).value());
}

Result<std::string> ParsedJinja::render(const nlohmann::ordered_json& context, const JinjaOptions& options) const {
    auto rendered = render_checked(context, options);
    if (!rendered) return Error{rendered.error().message};
    return std::move(rendered).value();
}

Result<std::string, JinjaRenderError> ParsedJinja::render_checked(const nlohmann::ordered_json& context,
                                                                  const JinjaOptions& options) const {
    return template_errors_as_result([&] {
        jinja::Interpreter interpreter(options);
        return interpreter.render(*program_, jinja::Value::from_json(context));
    });
}

Result<std::string> render_jinja(std::string_view template_source, const nlohmann::ordered_json& context,
                                 const JinjaOptions& options) {
    auto parsed = ParsedJinja::parse(template_source, options.limits.max_depth);
    if (!parsed) return parsed.error();
    return parsed->render(context, options);
}

Result<std::string> render_jinja(std::string_view template_source, const nlohmann::ordered_json& context,
                                 const JinjaLimits& limits) {
    JinjaOptions options;
    options.limits = limits;
    return render_jinja(template_source, context, options);
}

Result<std::string> render_jinja(std::string_view template_source, const nlohmann::json& context,
                                 const JinjaLimits& limits) {
    return render_jinja(template_source, nlohmann::ordered_json(context), limits);
}

}  // namespace tempered
