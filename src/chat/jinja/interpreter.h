// Interpreter: executes a parsed Template against a context, with Python/jinja2 semantics for every
// operator, lookup and statement. Filters, tests, methods and globals live in builtins.cpp.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "chat/jinja/ast.h"
#include "chat/jinja/jinja.h"
#include "chat/jinja/value.h"

namespace tempered::jinja {

struct Scope {
    std::unordered_map<std::string, Value> vars;
    std::shared_ptr<Scope> parent;
};

enum class Flow : uint8_t { Normal, Break, Continue };

class Interpreter {
public:
    explicit Interpreter(const JinjaOptions& options);
    ~Interpreter();

    // Throws TemplateError.
    std::string render(const Template& tmpl, const Value& context);

    // ---- services for builtins ----
    Value call(const Value& callee, CallArgs& args);
    std::vector<Value> iterate(const Value& value);
    void count_iterations(size_t n = 1);
    void check_size(size_t bytes) const;  // one string / list / output must fit max_output_bytes
    void charge(size_t bytes);            // work done copying or scanning, bounded by max_work_bytes
    void count_step();                    // one expression or statement evaluated, bounded by max_render_steps
    const JinjaOptions& options() const { return options_; }
    std::shared_ptr<DictData> new_namespace();

private:
    Value eval(const Expr& e, const std::shared_ptr<Scope>& scope);
    Value eval_call(const Expr& e, const std::shared_ptr<Scope>& scope, const Value* caller);
    void eval_args(const Expr& e, const std::shared_ptr<Scope>& scope, CallArgs& args);
    Value eval_filter(const Expr& e, const std::shared_ptr<Scope>& scope);
    Value lookup(const std::string& name, const std::shared_ptr<Scope>& scope) const;

    Flow exec(const StmtList& body, const std::shared_ptr<Scope>& scope, std::string& out);
    Flow exec_stmt(const Stmt& s, const std::shared_ptr<Scope>& scope, std::string& out);
    Flow exec_for(const Stmt& s, const std::shared_ptr<Scope>& scope, std::string& out);
    void exec_set(const Stmt& s, const std::shared_ptr<Scope>& scope);
    void assign_targets(const std::vector<std::string>& targets, const Value& value, Scope& scope);
    Value make_macro(const Stmt& s, const std::shared_ptr<Scope>& scope);
    void append(std::string& out, std::string_view text);
    void check_render_time() const;  // fails past JinjaLimits::max_render_time

    JinjaOptions options_;
    std::shared_ptr<Scope> root_;
    size_t iterations_ = 0;
    size_t work_bytes_ = 0;
    size_t steps_ = 0;
    std::chrono::steady_clock::time_point started_;  // when render() began, for max_render_time
    int macro_depth_ = 0;                            // macro recursion
    int frames_ = 0;                                 // nested eval / exec calls, bounds the native stack
    const Value* filter_block_input_ = nullptr;
    std::vector<std::shared_ptr<DictData>> namespaces_;  // cleared after render to break cycles
};

// ---- operations shared by the interpreter and the builtins (operations.cpp) ----
Value get_attribute(const Value& object, const std::string& name);
Value get_item(const Value& object, const Value& key);
Value get_slice(const Value& object, const Value& start, const Value& stop, const Value& step);
Value binary_op(const std::string& op, const Value& a, const Value& b, Interpreter& interp);
bool contains(const Value& container, const Value& item);
// Bytes a comparison may read (what the `==` operator and the eq / in tests are charged): `in` scans the
// container (a dict looks its key up), the others read both sides as far as the shorter one goes.
size_t comparison_cost(const std::string& op, const Value& left, const Value& right);
[[noreturn]] void fail_undefined(const Value& undefined);

// ---- builtins (builtins.cpp) ----
Value apply_filter(Interpreter& interp, const std::string& name, const Value& value, CallArgs& args);
bool apply_test(Interpreter& interp, const std::string& name, const Value& value, CallArgs& args);
void install_globals(Scope& root);
Value string_method(const Value& string, const std::string& name);
std::string python_percent_format(Interpreter& interp, const std::string& format, const Value& args);
std::string html_escape(const std::string& s);

}  // namespace tempered::jinja
