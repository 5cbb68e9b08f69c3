// Value: what a Jinja expression evaluates to, modelled on the Python objects jinja2 hands around
// (None, bool, int, float, str, list, tuple, dict, callables, namespace) plus jinja2's Undefined.
// Lists and dicts are shared by reference like Python objects; the sandbox never mutates them.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace tempered::jinja {

// Raised anywhere inside the interpreter; render_jinja turns it into an Error with the line number.
enum class ErrorCause : uint8_t {
    Fault,   // the template is wrong for its input (a type error, an undefined name, …)
    Raised,  // the template called raise_exception(): a deliberate error
    Limit,   // a JinjaLimits bound (or another sandbox bound) stopped it
};

struct TemplateError {
    std::string message;
    int line = 0;  // 0 = not yet known; the statement being executed fills it in
    ErrorCause cause = ErrorCause::Fault;
};

[[noreturn]] inline void fail(std::string message, int line = 0) { throw TemplateError{std::move(message), line}; }
[[noreturn]] inline void fail_limit(std::string message, int line = 0) {
    throw TemplateError{std::move(message), line, ErrorCause::Limit};
}

// A string or list over JinjaLimits::max_output_bytes; the message names the limit.
[[noreturn]] inline void fail_output_size(size_t max_bytes) {
    fail_limit("output size limit exceeded: max_output_bytes (" + std::to_string(max_bytes) + ")");
}

// Iterator: what jinja2 filters such as map/select/unique return (a Python generator): single-pass,
// always truthy, no len(), not JSON-serializable. Its items live in a ListData with a cursor.
enum class Kind : uint8_t {
    Undefined,
    None,
    Bool,
    Int,
    Float,
    String,
    List,
    Dict,
    Function,
    Namespace,
    Loop,
    Iterator
};

class Value;
struct CallArgs;
class Interpreter;

// Values nest at most this deep (JSON input included), so recursive printing, comparison and
// destruction stay within the native stack.
inline constexpr int kMaxValueDepth = 512;

struct ListData {
    std::vector<Value> items;
    bool is_tuple = false;
    size_t bytes = 0;  // approximate deep size, for output and memory limits
    int depth = 1;
    size_t cursor = 0;  // iterators only: items before it have been consumed
};

// A Python dict: insertion-ordered, with a hash index for string keys (the common case).
class DictData {
public:
    const Value* find(const Value& key) const;
    const Value* find(std::string_view key) const;
    void set(const Value& key, Value value);
    size_t size() const;  // out of line: clang needs Value complete to instantiate the pair's size
    const std::vector<std::pair<Value, Value>>& entries() const { return entries_; }
    size_t bytes() const { return bytes_; }
    int depth() const { return depth_; }

private:
    std::vector<std::pair<Value, Value>> entries_;
    size_t bytes_ = 0;
    int depth_ = 1;
    // Transparent, so that a lookup by string_view hashes the key in place instead of copying it first.
    struct StringHash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    std::unordered_map<std::string, size_t, StringHash, std::equal_to<>> string_index_;
};

// State behind a for loop's `loop` variable; its attributes are computed on access.
struct LoopData {
    std::shared_ptr<const std::vector<Value>> items;
    size_t index = 0;
    std::shared_ptr<std::vector<Value>> changed_state;  // last arguments of loop.changed()
};

using NativeFunction = std::function<Value(Interpreter&, CallArgs&)>;

struct FunctionData {
    std::string name;
    NativeFunction call;
};

class Value {
public:
    Value() = default;  // Undefined
    static Value undefined(std::string hint = {});
    static Value none();
    Value(bool b);
    Value(int64_t i);
    Value(int i) : Value(static_cast<int64_t>(i)) {}
    Value(size_t i) : Value(static_cast<int64_t>(i)) {}
    Value(double f);
    Value(std::string s);
    Value(const char* s) : Value(std::string(s)) {}
    static Value list(std::vector<Value> items, bool is_tuple = false);
    static Value iterator(std::vector<Value> items);
    // markupsafe.Markup: a str marked safe by |safe or |escape; `+` and `%` HTML-escape plain strings
    // combined with it (jinja2 keeps this behaviour with autoescape off).
    static Value markup(std::string s);
    static Value dict(std::shared_ptr<DictData> data);
    static Value dict() { return dict(std::make_shared<DictData>()); }
    static Value function(std::string name, NativeFunction call);
    static Value namespace_object(std::shared_ptr<DictData> attributes);
    static Value loop(std::shared_ptr<LoopData> data);
    static Value from_json(const nlohmann::ordered_json& json, int depth = 0);

    Kind kind() const { return kind_; }
    bool is_undefined() const { return kind_ == Kind::Undefined; }
    bool is_none() const { return kind_ == Kind::None; }
    bool is_bool() const { return kind_ == Kind::Bool; }
    bool is_int() const { return kind_ == Kind::Int; }
    bool is_float() const { return kind_ == Kind::Float; }
    bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float || kind_ == Kind::Bool; }
    bool is_string() const { return kind_ == Kind::String; }
    bool is_markup() const { return kind_ == Kind::String && bool_; }
    bool is_list() const { return kind_ == Kind::List; }  // list or tuple
    bool is_tuple() const { return kind_ == Kind::List && list_->is_tuple; }
    bool is_dict() const { return kind_ == Kind::Dict; }
    bool is_function() const { return kind_ == Kind::Function; }
    bool is_namespace() const { return kind_ == Kind::Namespace; }
    bool is_loop() const { return kind_ == Kind::Loop; }
    bool is_iterator() const { return kind_ == Kind::Iterator; }

    bool as_bool() const { return bool_; }
    int64_t as_int() const { return kind_ == Kind::Bool ? (bool_ ? 1 : 0) : int_; }
    double as_double() const { return kind_ == Kind::Float ? float_ : static_cast<double>(as_int()); }
    const std::string& as_string() const { return string_ ? *string_ : empty_string(); }
    const std::vector<Value>& items() const { return list_->items; }  // list, tuple or iterator
    ListData& iterator_state() const { return *list_; }
    const DictData& dict_data() const { return *dict_; }
    DictData& mutable_dict_data() const { return *dict_; }  // namespaces only
    const FunctionData& function_data() const { return *function_; }
    const LoopData& loop_data() const { return *loop_; }
    const std::string& undefined_hint() const { return as_string(); }

    bool truthy() const;
    // Approximate deep size in bytes (what printing or copying it costs) and nesting depth.
    // Namespaces count as leaves: they may refer to themselves.
    size_t approx_bytes() const;
    int depth() const;
    // Python-like type name for error messages: "str", "int", "dict", "NoneType", ...
    std::string type_name() const;

private:
    Kind kind_ = Kind::Undefined;
    bool bool_ = false;
    int64_t int_ = 0;
    double float_ = 0.0;
    // The string, or the undefined hint; shared, so that passing a long string around (a variable
    // lookup, an attribute, a loop item) costs nothing per use.
    std::shared_ptr<const std::string> string_;
    static const std::string& empty_string();
    std::shared_ptr<ListData> list_;
    std::shared_ptr<DictData> dict_;  // dict entries or namespace attributes
    std::shared_ptr<FunctionData> function_;
    std::shared_ptr<LoopData> loop_;
};

// Positional and keyword arguments of a call, with Python-style binding helpers.
struct CallArgs {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keyword;

    // The argument at `index` or named `name`; nullptr if absent.
    const Value* get(size_t index, std::string_view name) const;
    Value get_or(size_t index, std::string_view name, Value fallback) const;
};

// str(value) as Python prints it; Undefined prints as "".
std::string to_str(const Value& value);
// repr(value) as Python prints it.
std::string to_repr(const Value& value);
// Python float repr: shortest round-trip digits, "1.0", "1e-05", "1e+16".
std::string float_repr(double value);
// json.dumps(value, ensure_ascii=False, indent=indent, separators=..., sort_keys=...).
struct JsonDumpOptions {
    std::string indent;  // newline + this per level when has_indent
    bool has_indent = false;
    std::string item_separator = ", ";
    std::string key_separator = ": ";
    bool sort_keys = false;
    bool ensure_ascii = false;    // escape non-ASCII as \uXXXX
    size_t max_bytes = SIZE_MAX;  // fail beyond this (indentation can multiply the size)
};
std::string json_dumps(const Value& value, const JsonDumpOptions& options);

// Python semantics of ==, <, membership.
bool values_equal(const Value& a, const Value& b);
// Three-way compare for ordering; fails (TypeError) on types Python cannot order.
int compare_values(const Value& a, const Value& b, const char* op = "<");

// Concatenation without `"literal" + std::string` temporaries (GCC 12 -Wrestrict false positives).
inline std::string cat(std::initializer_list<std::string_view> parts) {
    std::string out;
    for (auto p : parts) out.append(p.data(), p.size());
    return out;
}

// What a string method or filter is charged per byte of its input (JinjaLimits::max_work_bytes): many split
// the string into characters first, a std::string each, which costs far more than copying the byte.
inline constexpr size_t kStringScanCost = 8;

// UTF-8 helpers: Python str indexes by code point.
std::vector<std::string> utf8_chars(std::string_view s);
size_t utf8_length(std::string_view s);
size_t utf8_sequence_length(unsigned char lead);  // bytes of the character a lead byte starts; 1 if invalid
// Charges the render running on this thread for splitting `bytes` into characters (a std::string each, the
// costliest step of most string methods); nothing outside a render. utf8_chars calls it.
void charge_character_split(size_t bytes);
// Charges the render running on this thread for `bytes` of work (hashing a dict key, say); nothing outside a
// render, where DictData is built from the request's JSON.
void charge_active_render(size_t bytes);
// utf8_chars(s)[index] without splitting the rest of s; "" past the end.
std::string utf8_char_at(std::string_view s, size_t index);

}  // namespace tempered::jinja
