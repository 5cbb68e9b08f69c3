// Python semantics of attribute / item lookup, slicing, arithmetic and membership, as jinja2's
// ImmutableSandboxedEnvironment applies them.
#include <cmath>

#include "chat/jinja/interpreter.h"

namespace tempered::jinja {
namespace {

std::string object_type_repr(const Value& v) {
    if (v.is_none()) return "None";
    return v.type_name() + " object";
}

Value missing_attribute(const Value& object, const std::string& name) {
    return Value::undefined(cat({"'", object_type_repr(object), "' has no attribute '", name, "'"}));
}

Value unsafe_attribute(const Value& object, const std::string& name) {
    return Value::undefined("access to attribute '" + name + "' of '" + object.type_name() + "' object is unsafe.");
}

Value dict_method(const Value& dict, const std::string& name) {
    if (name == "items") {
        return Value::function("items", [dict](Interpreter& in, CallArgs&) {
            in.charge(dict.dict_data().size() * 3 * sizeof(Value));  // a tuple of two per entry
            std::vector<Value> out;
            for (const auto& [k, v] : dict.dict_data().entries()) out.push_back(Value::list({k, v}, true));
            return Value::list(std::move(out));
        });
    }
    if (name == "keys" || name == "values") {
        const bool keys = name == "keys";
        return Value::function(name, [dict, keys](Interpreter& in, CallArgs&) {
            in.charge(dict.dict_data().size() * sizeof(Value));
            std::vector<Value> out;
            for (const auto& [k, v] : dict.dict_data().entries()) out.push_back(keys ? k : v);
            return Value::list(std::move(out));
        });
    }
    if (name == "get") {
        return Value::function("get", [dict](Interpreter&, CallArgs& args) {
            if (args.positional.empty()) fail("get expected at least 1 argument, got 0");
            const Value* found = dict.dict_data().find(args.positional[0]);
            if (found) return *found;
            return args.positional.size() > 1 ? args.positional[1] : Value::none();
        });
    }
    if (name == "copy") {
        return Value::function("copy", [dict](Interpreter&, CallArgs&) { return dict; });
    }
    if (name == "pop" || name == "popitem" || name == "setdefault" || name == "update" || name == "clear") {
        return unsafe_attribute(dict, name);
    }
    return Value();
}

Value list_method(const Value& list, const std::string& name) {
    if (name == "index" || name == "count") {
        const bool index = name == "index";
        return Value::function(name, [list, index](Interpreter& in, CallArgs& args) {
            if (args.positional.empty()) fail(std::string(index ? "index" : "count") + "() takes at least 1 argument");
            in.charge(comparison_cost("in", args.positional[0], list));  // compares with every item, as `in` does
            int64_t count = 0;
            const auto& items = list.items();
            for (size_t i = 0; i < items.size(); ++i) {
                if (!values_equal(items[i], args.positional[0])) continue;
                if (index) return Value(static_cast<int64_t>(i));
                ++count;
            }
            if (index) fail(to_repr(args.positional[0]) + " is not in list");
            return Value(count);
        });
    }
    if (!list.is_tuple() && (name == "append" || name == "extend" || name == "insert" || name == "pop" ||
                             name == "remove" || name == "reverse" || name == "sort" || name == "clear")) {
        return unsafe_attribute(list, name);
    }
    return Value();
}

int64_t normalize_index(int64_t index, size_t size) { return index < 0 ? index + static_cast<int64_t>(size) : index; }

int64_t slice_bound(const Value& v, const char* what) {
    if (v.is_int() || v.is_bool()) return v.as_int();
    fail(std::string("slice ") + what + " must be an integer or None");
}

Value loop_attribute(const Value& loop, const std::string& name) {
    const LoopData& data = loop.loop_data();
    const auto i = static_cast<int64_t>(data.index);
    const auto n = static_cast<int64_t>(data.items->size());
    if (name == "index") return Value(i + 1);
    if (name == "index0") return Value(i);
    if (name == "revindex") return Value(n - i);
    if (name == "revindex0") return Value(n - i - 1);
    if (name == "first") return Value(i == 0);
    if (name == "last") return Value(i + 1 == n);
    if (name == "length") return Value(n);
    if (name == "depth") return Value(int64_t{1});
    if (name == "depth0") return Value(int64_t{0});
    if (name == "previtem")
        return i > 0 ? (*data.items)[data.index - 1] : Value::undefined("there is no previous item");
    if (name == "nextitem")
        return i + 1 < n ? (*data.items)[data.index + 1] : Value::undefined("there is no next item");
    if (name == "cycle") {
        const size_t index = data.index;
        return Value::function("cycle", [index](Interpreter&, CallArgs& args) {
            if (args.positional.empty()) fail("no items for cycling given");
            return args.positional[index % args.positional.size()];
        });
    }
    if (name == "changed") {
        auto state = data.changed_state;
        return Value::function("changed", [state](Interpreter& in, CallArgs& args) {
            Value current = Value::list(args.positional);
            in.charge(current.approx_bytes());  // compared with the previous arguments
            if (!state->empty() && values_equal((*state)[0], current)) return Value(false);
            state->assign(1, current);
            return Value(true);
        });
    }
    return missing_attribute(loop, name);
}

}  // namespace

void fail_undefined(const Value& undefined) {
    fail(undefined.undefined_hint().empty() ? "undefined value" : undefined.undefined_hint());
}

Value get_attribute(const Value& object, const std::string& name) {
    switch (object.kind()) {
        case Kind::Undefined: fail_undefined(object);
        case Kind::Dict: {
            Value method = dict_method(object, name);
            if (method.is_function() || !method.undefined_hint().empty()) return method;
            const Value* found = object.dict_data().find(std::string_view(name));
            return found ? *found : missing_attribute(object, name);
        }
        case Kind::Namespace: {
            const Value* found = object.dict_data().find(std::string_view(name));
            return found ? *found : missing_attribute(object, name);
        }
        case Kind::Loop: return loop_attribute(object, name);
        case Kind::String: {
            Value method = string_method(object, name);
            return method.is_function() ? method : missing_attribute(object, name);
        }
        case Kind::List: {
            Value method = list_method(object, name);
            if (method.is_function() || !method.undefined_hint().empty()) return method;
            return missing_attribute(object, name);
        }
        default: return missing_attribute(object, name);
    }
}

Value get_item(const Value& object, const Value& key) {
    switch (object.kind()) {
        case Kind::Undefined: fail_undefined(object);
        case Kind::Dict: {
            if (const Value* found = object.dict_data().find(key)) return *found;
            if (key.is_string()) {
                Value method = dict_method(object, key.as_string());
                if (method.is_function() || !method.undefined_hint().empty()) return method;
                return missing_attribute(object, key.as_string());
            }
            return Value::undefined("'dict object' has no element " + to_repr(key));
        }
        case Kind::List:
        case Kind::String: {
            if (key.is_int() || key.is_bool()) {
                const size_t size = object.is_list() ? object.items().size() : utf8_length(object.as_string());
                const int64_t index = normalize_index(key.as_int(), size);
                if (index < 0 || index >= static_cast<int64_t>(size)) {
                    return Value::undefined(cat({"'", object_type_repr(object), "' has no element ", to_repr(key)}));
                }
                if (object.is_list()) return object.items()[static_cast<size_t>(index)];
                return Value(utf8_char_at(object.as_string(), static_cast<size_t>(index)));
            }
            if (key.is_string()) return get_attribute(object, key.as_string());
            return Value::undefined(cat({"'", object_type_repr(object), "' has no element ", to_repr(key)}));
        }
        case Kind::Namespace:
        case Kind::Loop:
            if (key.is_string()) return get_attribute(object, key.as_string());
            return Value::undefined("'Namespace object' has no element " + to_repr(key));
        default:
            if (key.is_string()) return missing_attribute(object, key.as_string());
            return Value::undefined(cat({"'", object_type_repr(object), "' has no element ", to_repr(key)}));
    }
}

Value get_slice(const Value& object, const Value& start_v, const Value& stop_v, const Value& step_v) {
    if (object.is_undefined()) fail_undefined(object);
    if (object.is_dict()) fail("unhashable type: 'slice'");
    if (!object.is_list() && !object.is_string()) fail(cat({"'", object.type_name(), "' object is not subscriptable"}));
    std::vector<std::string> chars;
    if (object.is_string()) chars = utf8_chars(object.as_string());
    const auto size = static_cast<int64_t>(object.is_list() ? object.items().size() : chars.size());
    const int64_t step = step_v.is_none() ? 1 : slice_bound(step_v, "step");
    if (step == 0) fail("slice step cannot be zero");
    const auto clamp = [&](const Value& v, int64_t fallback, int64_t low, int64_t high) {
        if (v.is_none()) return fallback;
        int64_t i = slice_bound(v, "index");
        if (i < 0) i += size;
        return std::max(low, std::min(i, high));
    };
    int64_t start, stop;
    if (step > 0) {
        start = clamp(start_v, 0, 0, size);
        stop = clamp(stop_v, size, 0, size);
    } else {
        start = clamp(start_v, size - 1, -1, size - 1);
        stop = clamp(stop_v, -1, -1, size - 1);
    }
    std::vector<Value> items;
    std::string text;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
        if (object.is_list()) {
            items.push_back(object.items()[static_cast<size_t>(i)]);
        } else {
            text += chars[static_cast<size_t>(i)];
        }
    }
    if (object.is_string()) return Value(std::move(text));
    return Value::list(std::move(items), object.is_tuple());
}

bool contains(const Value& container, const Value& item) {
    switch (container.kind()) {
        case Kind::Undefined: return false;
        case Kind::String:
            if (item.is_undefined()) fail_undefined(item);
            if (!item.is_string()) fail("'in <string>' requires string as left operand, not " + item.type_name());
            return container.as_string().find(item.as_string()) != std::string::npos;
        case Kind::List:
            for (const auto& v : container.items()) {
                if (values_equal(v, item)) return true;
            }
            return false;
        case Kind::Dict:
            if ((item.is_list() && !item.is_tuple()) || item.is_dict() || item.is_iterator()) {
                fail("unhashable type: '" + item.type_name() + "'");
            }
            return container.dict_data().find(item) != nullptr;
        default: fail("argument of type '" + container.type_name() + "' is not iterable");
    }
}

namespace {

Value repeat(const Value& seq, int64_t times, Interpreter& interp) {
    if (seq.is_string() ? seq.as_string().empty() : seq.items().empty()) return seq;
    if (times <= 0) return seq.is_string() ? Value(std::string()) : Value::list({}, seq.is_tuple());
    if (seq.is_string()) {
        interp.check_size(seq.as_string().size() * static_cast<size_t>(std::min<int64_t>(times, INT32_MAX)));
        interp.charge(seq.as_string().size() * static_cast<size_t>(times));
        std::string out;
        for (int64_t i = 0; i < times; ++i) out += seq.as_string();
        return seq.is_markup() ? Value::markup(std::move(out)) : Value(std::move(out));
    }
    interp.check_size(seq.approx_bytes() * static_cast<size_t>(std::min<int64_t>(times, INT32_MAX)));
    interp.charge((seq.approx_bytes() + seq.items().size() * sizeof(Value)) * static_cast<size_t>(times));
    std::vector<Value> out;
    for (int64_t i = 0; i < times; ++i) out.insert(out.end(), seq.items().begin(), seq.items().end());
    return Value::list(std::move(out), seq.is_tuple());
}

// Markup % args escapes every plain-string argument.
Value escape_markup_args(const Value& args) {
    const auto escape = [](const Value& v) {
        return v.is_string() && !v.is_markup() ? Value::markup(html_escape(v.as_string())) : v;
    };
    if (args.is_tuple()) {
        std::vector<Value> items;
        for (const auto& v : args.items()) items.push_back(escape(v));
        return Value::list(std::move(items), true);
    }
    return escape(args);
}

[[noreturn]] void unsupported(const std::string& op, const Value& a, const Value& b) {
    if (op == "+" && a.is_string()) fail("can only concatenate str (not \"" + b.type_name() + "\") to str");
    if (op == "+" && a.is_list() && !a.is_tuple()) {
        fail("can only concatenate list (not \"" + b.type_name() + "\") to list");
    }
    fail("unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" + b.type_name() + "'");
}

}  // namespace

Value binary_op(const std::string& op, const Value& a, const Value& b, Interpreter& interp) {
    if (op == "~") {
        std::string out = to_str(a);
        const std::string right = to_str(b);
        interp.check_size(out.size() + right.size());
        interp.charge(out.size() + right.size());
        return Value(out + right);
    }
    if (op == "%" && a.is_string()) {  // printf-style; Undefined passes as an empty mapping, as in Python
        if (a.is_markup()) return Value::markup(python_percent_format(interp, a.as_string(), escape_markup_args(b)));
        return Value(python_percent_format(interp, a.as_string(), b));
    }
    if (a.is_undefined()) fail_undefined(a);
    if (b.is_undefined()) fail_undefined(b);
    const bool numbers = a.is_number() && b.is_number();
    const bool any_float = a.is_float() || b.is_float();
    if (op == "+") {
        if (numbers) {
            if (any_float) return Value(a.as_double() + b.as_double());
            int64_t r = 0;
            if (__builtin_add_overflow(a.as_int(), b.as_int(), &r)) fail("integer overflow");
            return Value(r);
        }
        if (a.is_string() && b.is_string()) {
            interp.check_size(a.as_string().size() + b.as_string().size());
            interp.charge(a.as_string().size() + b.as_string().size());
            if (a.is_markup() || b.is_markup()) {
                const std::string left = a.is_markup() ? a.as_string() : html_escape(a.as_string());
                const std::string right = b.is_markup() ? b.as_string() : html_escape(b.as_string());
                return Value::markup(left + right);
            }
            return Value(a.as_string() + b.as_string());
        }
        if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
            interp.check_size(a.approx_bytes() + b.approx_bytes());
            // Copying the items costs a Value each, however small their contents.
            interp.charge(a.approx_bytes() + b.approx_bytes() + (a.items().size() + b.items().size()) * sizeof(Value));
            std::vector<Value> items = a.items();
            items.insert(items.end(), b.items().begin(), b.items().end());
            return Value::list(std::move(items), a.is_tuple());
        }
        unsupported(op, a, b);
    }
    if (op == "-") {
        if (!numbers) unsupported(op, a, b);
        if (any_float) return Value(a.as_double() - b.as_double());
        int64_t r = 0;
        if (__builtin_sub_overflow(a.as_int(), b.as_int(), &r)) fail("integer overflow");
        return Value(r);
    }
    if (op == "*") {
        if (numbers) {
            if (any_float) return Value(a.as_double() * b.as_double());
            int64_t r = 0;
            if (__builtin_mul_overflow(a.as_int(), b.as_int(), &r)) fail("integer overflow");
            return Value(r);
        }
        if ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) return repeat(a, b.as_int(), interp);
        if ((b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) return repeat(b, a.as_int(), interp);
        unsupported(op, a, b);
    }
    if (op == "/") {
        if (!numbers) unsupported(op, a, b);
        if (b.as_double() == 0.0) fail(any_float ? "float division by zero" : "division by zero");
        return Value(a.as_double() / b.as_double());
    }
    if (op == "//" || op == "%") {
        if (!numbers) unsupported(op, a, b);
        if (any_float) {
            const double x = a.as_double(), y = b.as_double();
            if (y == 0.0) fail(op == "//" ? "float floor division by zero" : "float modulo");
            double mod = std::fmod(x, y);
            if (mod != 0.0 && ((mod < 0) != (y < 0))) mod += y;
            if (op == "%") return Value(mod);
            const double div = (x - mod) / y;
            double floored = std::floor(div);
            if (div - floored > 0.5) floored += 1.0;
            return Value(floored);
        }
        const int64_t x = a.as_int(), y = b.as_int();
        if (y == 0) fail("integer division or modulo by zero");
        if (x == INT64_MIN && y == -1) fail("integer overflow");
        int64_t q = x / y, r = x % y;
        if (r != 0 && ((r < 0) != (y < 0))) {
            q -= 1;
            r += y;
        }
        return Value(op == "//" ? q : r);
    }
    if (op == "**") {
        if (!numbers) unsupported(op, a, b);
        if (any_float || b.as_int() < 0) return Value(std::pow(a.as_double(), b.as_double()));
        int64_t result = 1, base = a.as_int(), exponent = b.as_int();
        while (exponent > 0) {
            if ((exponent & 1) && __builtin_mul_overflow(result, base, &result)) fail("integer overflow");
            exponent >>= 1;
            if (exponent > 0 && __builtin_mul_overflow(base, base, &base)) fail("integer overflow");
        }
        return Value(result);
    }
    fail("unknown operator " + op);
}

}  // namespace tempered::jinja
