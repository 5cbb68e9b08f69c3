// jinja2's builtin filters and tests, transformers' tojson, and the globals a chat template sees.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <unordered_set>

#include "chat/jinja/interpreter.h"
#include "chat/jinja/strings.h"

namespace tempered::jinja {
namespace {

using Filter = Value (*)(Interpreter&, const Value&, CallArgs&);
using Test = bool (*)(Interpreter&, const Value&, CallArgs&);

std::vector<Value> as_list(Interpreter& interp, const Value& v) { return interp.iterate(v); }

int64_t int_param(const CallArgs& args, size_t index, const char* name, int64_t fallback) {
    const Value* v = args.get(index, name);
    if (!v || v->is_none()) return fallback;
    if (!v->is_int() && !v->is_bool()) fail(std::string("'") + name + "' must be an integer");
    return v->as_int();
}

bool bool_param(const CallArgs& args, size_t index, const char* name, bool fallback) {
    const Value* v = args.get(index, name);
    return v ? v->truthy() : fallback;
}

std::string string_param(const CallArgs& args, size_t index, const char* name, std::string fallback) {
    const Value* v = args.get(index, name);
    if (!v || v->is_none()) return fallback;
    return to_str(*v);
}

// jinja2's make_attrgetter: "a.b.0" walks items (getitem) part by part.
Value lookup_path(const Value& item, const Value& attribute) {
    if (attribute.is_int()) return get_item(item, attribute);
    const std::string path = to_str(attribute);
    Value current = item;
    size_t start = 0;
    while (true) {
        const size_t dot = path.find('.', start);
        const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        const bool numeric =
            !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
        current =
            numeric ? get_item(current, Value(static_cast<int64_t>(std::stoll(part)))) : get_item(current, Value(part));
        if (dot == std::string::npos) return current;
        start = dot + 1;
    }
}

Value ignore_case(const Value& v, bool case_sensitive) {
    if (!case_sensitive && v.is_string()) return Value(py_lower(v.as_string()));
    return v;
}

Value sort_key(const Value& item, const Value* attribute, bool case_sensitive) {
    const Value key = attribute && !attribute->is_none() ? lookup_path(item, *attribute) : item;
    return ignore_case(key, case_sensitive);
}

// A sort compares each key about log2(n) times, each comparison reading up to the key's size.
void stable_sort(Interpreter& interp, std::vector<Value>& items, const std::vector<Value>& keys, bool reverse) {
    size_t key_bytes = 0, rounds = 1;
    for (const Value& key : keys) key_bytes += key.approx_bytes();
    while ((size_t{1} << rounds) < keys.size()) ++rounds;
    interp.charge(key_bytes * rounds);
    std::vector<size_t> order(items.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        const int c = compare_values(keys[a], keys[b]);
        return reverse ? c > 0 : c < 0;
    });
    std::vector<Value> sorted;
    sorted.reserve(items.size());
    for (size_t i : order) sorted.push_back(items[i]);
    items = std::move(sorted);
}

double to_number_or(const Value& v, double fallback, bool& ok) {
    ok = true;
    if (v.is_number()) return v.as_double();
    if (v.is_string()) {
        const std::string s = py_strip(v.as_string(), nullptr, true, true);
        std::string cleaned;
        for (char c : s) {
            if (c != '_') cleaned += c;
        }
        char* end = nullptr;
        const double d = std::strtod(cleaned.c_str(), &end);
        if (!cleaned.empty() && end && *end == '\0') return d;
    }
    ok = false;
    return fallback;
}

// ---- filters -----------------------------------------------------------------------------------

Value f_abs(Interpreter&, const Value& v, CallArgs&) {
    if (v.is_float()) return Value(std::fabs(v.as_double()));
    if (v.is_number()) return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
    fail("bad operand type for abs(): '" + v.type_name() + "'");
}

Value f_attr(Interpreter&, const Value& v, CallArgs& args) {
    return get_attribute(v, string_param(args, 0, "name", ""));
}

Value f_batch(Interpreter& interp, const Value& v, CallArgs& args) {
    const int64_t size = int_param(args, 0, "linecount", 1);
    if (size <= 0) fail("batch size must be positive");
    const Value* fill = args.get(1, "fill_with");
    std::vector<Value> batches, current;
    for (auto& item : as_list(interp, v)) {
        current.push_back(item);
        if (static_cast<int64_t>(current.size()) == size) {
            batches.push_back(Value::list(std::move(current)));
            current.clear();
        }
    }
    if (!current.empty()) {
        if (fill && !fill->is_none()) {
            const auto missing = static_cast<uint64_t>(size) - current.size();  // batch(10**9, 'x') on one item
            if (missing > interp.options().limits.max_output_bytes / 16)
                fail_output_size(interp.options().limits.max_output_bytes);
            interp.check_size(missing * fill->approx_bytes());
            while (static_cast<int64_t>(current.size()) < size) current.push_back(*fill);
        }
        batches.push_back(Value::list(std::move(current)));
    }
    return Value::iterator(std::move(batches));
}

Value f_capitalize(Interpreter&, const Value& v, CallArgs&) { return Value(py_capitalize(to_str(v))); }

Value f_center(Interpreter& interp, const Value& v, CallArgs& args) {
    const int64_t width = int_param(args, 0, "width", 80);
    interp.check_size(static_cast<size_t>(std::max<int64_t>(width, 0)));
    return Value(py_center(to_str(v), width, " "));
}

Value f_length(Interpreter&, const Value& v, CallArgs&) {
    switch (v.kind()) {
        case Kind::Undefined: return Value(int64_t{0});
        case Kind::String: return Value(static_cast<int64_t>(utf8_length(v.as_string())));
        case Kind::List: return Value(static_cast<int64_t>(v.items().size()));
        case Kind::Dict: return Value(static_cast<int64_t>(v.dict_data().size()));
        default: fail("object of type '" + v.type_name() + "' has no len()");
    }
}

Value f_default(Interpreter&, const Value& v, CallArgs& args) {
    const bool boolean = bool_param(args, 1, "boolean", false);
    if (v.is_undefined() || (boolean && !v.truthy())) return args.get_or(0, "default_value", Value(std::string()));
    return v;
}

Value f_dictsort(Interpreter& interp, const Value& v, CallArgs& args) {
    if (!v.is_dict()) fail("dictsort: value is not a mapping");
    interp.charge(v.dict_data().size() * 3 * sizeof(Value));  // a tuple of two per entry
    const bool case_sensitive = bool_param(args, 0, "case_sensitive", false);
    const std::string by = string_param(args, 1, "by", "key");
    const bool reverse = bool_param(args, 2, "reverse", false);
    if (by != "key" && by != "value") fail("You can only sort by either 'key' or 'value'");
    std::vector<Value> items, keys;
    for (const auto& [k, val] : v.dict_data().entries()) {
        items.push_back(Value::list({k, val}, true));
        keys.push_back(ignore_case(by == "key" ? k : val, case_sensitive));
    }
    stable_sort(interp, items, keys, reverse);
    return Value::list(std::move(items));
}

}  // namespace

std::string html_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&#34;"; break;
            case '\'': out += "&#39;"; break;
            default: out += c;
        }
    }
    return out;
}

namespace {

Value f_escape(Interpreter&, const Value& v, CallArgs&) {
    return v.is_markup() ? v : Value::markup(html_escape(to_str(v)));
}
Value f_forceescape(Interpreter&, const Value& v, CallArgs&) { return Value::markup(html_escape(to_str(v))); }

Value f_first(Interpreter& interp, const Value& v, CallArgs&) {
    if (v.is_iterator()) {  // next(iter(seq)): takes one item only
        ListData& state = v.iterator_state();
        if (state.cursor >= state.items.size()) return Value::undefined("No first item, sequence was empty.");
        return state.items[state.cursor++];
    }
    auto items = as_list(interp, v);
    if (items.empty()) return Value::undefined("No first item, sequence was empty.");
    return items.front();
}

Value f_last(Interpreter& interp, const Value& v, CallArgs&) {
    if (v.is_iterator()) fail("'generator' object is not reversible");
    auto items = as_list(interp, v);
    if (items.empty()) return Value::undefined("No last item, sequence was empty.");
    return items.back();
}

Value f_float(Interpreter&, const Value& v, CallArgs& args) {
    if (v.is_undefined()) fail_undefined(v);
    bool ok;
    const double d = to_number_or(v, 0.0, ok);
    if (ok) return Value(d);
    return args.get_or(0, "default", Value(0.0));
}

Value f_int(Interpreter&, const Value& v, CallArgs& args) {
    const Value fallback = args.get_or(0, "default", Value(int64_t{0}));
    const int64_t base = int_param(args, 1, "base", 10);
    if (v.is_undefined()) fail_undefined(v);
    if (v.is_bool() || v.is_int()) return Value(v.as_int());
    if (v.is_float()) {
        if (!std::isfinite(v.as_double())) return fallback;
        return Value(static_cast<int64_t>(std::trunc(v.as_double())));
    }
    if (v.is_string()) {
        std::string s = py_strip(v.as_string(), nullptr, true, true);
        std::string cleaned;
        for (char c : s) {
            if (c != '_') cleaned += c;
        }
        char* end = nullptr;
        errno = 0;
        const long long n = std::strtoll(cleaned.c_str(), &end, static_cast<int>(base));
        if (!cleaned.empty() && end && *end == '\0' && errno == 0) return Value(static_cast<int64_t>(n));
        bool ok;
        const double d = to_number_or(v, 0.0, ok);
        if (ok && std::isfinite(d)) return Value(static_cast<int64_t>(std::trunc(d)));
    }
    return fallback;
}

Value f_items(Interpreter& interp, const Value& v, CallArgs&) {
    if (v.is_undefined()) return Value::iterator({});
    if (!v.is_dict()) fail("Can only get item pairs from a mapping.");
    interp.charge(v.dict_data().size() * 3 * sizeof(Value));  // a tuple of two per entry
    std::vector<Value> out;
    for (const auto& [k, val] : v.dict_data().entries()) out.push_back(Value::list({k, val}, true));
    return Value::iterator(std::move(out));
}

Value f_join(Interpreter& interp, const Value& v, CallArgs& args) {
    const std::string separator = string_param(args, 0, "d", "");
    const Value* attribute = args.get(1, "attribute");
    std::string out;
    bool first = true;
    for (const auto& item : as_list(interp, v)) {
        if (!first) out += separator;
        first = false;
        out += to_str(attribute && !attribute->is_none() ? lookup_path(item, *attribute) : item);
        interp.check_size(out.size());
    }
    interp.charge(out.size());
    return Value(std::move(out));
}

Value f_list(Interpreter& interp, const Value& v, CallArgs&) { return Value::list(as_list(interp, v)); }

Value f_lower(Interpreter&, const Value& v, CallArgs&) { return Value(py_lower(to_str(v))); }
Value f_upper(Interpreter&, const Value& v, CallArgs&) { return Value(py_upper(to_str(v))); }

Value f_map(Interpreter& interp, const Value& v, CallArgs& args) {
    std::vector<Value> out;
    if (!v.truthy()) return Value::iterator({});
    const Value* attribute = args.positional.empty() ? args.get(SIZE_MAX, "attribute") : nullptr;
    if (attribute) {
        const Value* fallback = args.get(SIZE_MAX, "default");
        for (const auto& item : as_list(interp, v)) {
            Value mapped = lookup_path(item, *attribute);
            if (mapped.is_undefined() && fallback) mapped = *fallback;
            out.push_back(std::move(mapped));
        }
        return Value::iterator(std::move(out));
    }
    if (args.positional.empty() || !args.positional[0].is_string()) fail("map requires a filter name or attribute=");
    const std::string name = args.positional[0].as_string();
    CallArgs rest;
    rest.positional.assign(args.positional.begin() + 1, args.positional.end());
    rest.keyword = args.keyword;
    for (const auto& item : as_list(interp, v)) {
        CallArgs call_args = rest;
        out.push_back(apply_filter(interp, name, item, call_args));
    }
    return Value::iterator(std::move(out));
}

Value min_max(Interpreter& interp, const Value& v, CallArgs& args, bool want_max) {
    const bool case_sensitive = bool_param(args, 0, "case_sensitive", false);
    const Value* attribute = args.get(1, "attribute");
    auto items = as_list(interp, v);
    if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
    size_t best = 0;
    Value best_key = sort_key(items[0], attribute, case_sensitive);
    for (size_t i = 1; i < items.size(); ++i) {
        Value key = sort_key(items[i], attribute, case_sensitive);
        const int c = compare_values(key, best_key);
        if (want_max ? c > 0 : c < 0) {
            best = i;
            best_key = std::move(key);
        }
    }
    return items[best];
}
Value f_max(Interpreter& i, const Value& v, CallArgs& a) { return min_max(i, v, a, true); }
Value f_min(Interpreter& i, const Value& v, CallArgs& a) { return min_max(i, v, a, false); }

Value f_replace(Interpreter& interp, const Value& v, CallArgs& args) {
    const int64_t count = int_param(args, 2, "count", -1);
    std::string out = py_replace(to_str(v), string_param(args, 0, "old", ""), string_param(args, 1, "new", ""), count,
                                 interp.options().limits.max_output_bytes);
    interp.charge(out.size());
    return Value(std::move(out));
}

Value f_reverse(Interpreter& interp, const Value& v, CallArgs&) {
    if (v.is_string()) {
        auto chars = utf8_chars(v.as_string());
        std::string out;
        for (auto it = chars.rbegin(); it != chars.rend(); ++it) out += *it;
        return Value(std::move(out));
    }
    const bool reversible = v.is_list() || v.is_dict();  // reversed() works; otherwise list(v)[::-1]
    auto items = as_list(interp, v);
    std::reverse(items.begin(), items.end());
    return reversible ? Value::iterator(std::move(items)) : Value::list(std::move(items));
}

Value f_round(Interpreter&, const Value& v, CallArgs& args) {
    const int64_t precision = int_param(args, 0, "precision", 0);
    const std::string method = string_param(args, 1, "method", "common");
    if (!v.is_number()) fail("type " + v.type_name() + " doesn't define __round__ method");
    if (method != "common" && method != "ceil" && method != "floor") fail("method must be 'common', 'ceil' or 'floor'");
    if (precision < -300 || precision > 300) fail("round precision out of range");
    if (method == "common") {
        if (!v.is_float()) return Value(v.as_int());
        if (precision >= 0) {
            char buf[1024];
            std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(precision), v.as_double());
            return Value(std::strtod(buf, nullptr));
        }
        const double scale = std::pow(10.0, static_cast<double>(-precision));
        return Value(std::nearbyint(v.as_double() / scale) * scale);
    }
    const double scale = std::pow(10.0, static_cast<double>(precision));
    const double scaled = v.as_double() * scale;
    return Value((method == "ceil" ? std::ceil(scaled) : std::floor(scaled)) / scale);
}

Value f_safe(Interpreter&, const Value& v, CallArgs&) { return Value::markup(to_str(v)); }

Value f_sort(Interpreter& interp, const Value& v, CallArgs& args) {
    const bool reverse = bool_param(args, 0, "reverse", false);
    const bool case_sensitive = bool_param(args, 1, "case_sensitive", false);
    const Value* attribute = args.get(2, "attribute");
    auto items = as_list(interp, v);
    std::vector<Value> keys;
    for (const auto& item : items) keys.push_back(sort_key(item, attribute, case_sensitive));
    stable_sort(interp, items, keys, reverse);
    return Value::list(std::move(items));
}

Value f_string(Interpreter&, const Value& v, CallArgs&) { return Value(to_str(v)); }

Value f_sum(Interpreter& interp, const Value& v, CallArgs& args) {
    const Value* attribute = args.get(0, "attribute");
    Value total = args.get_or(1, "start", Value(int64_t{0}));
    for (const auto& item : as_list(interp, v)) {
        total =
            binary_op("+", total, attribute && !attribute->is_none() ? lookup_path(item, *attribute) : item, interp);
    }
    return total;
}

Value f_title(Interpreter&, const Value& v, CallArgs&) {
    // jinja2's do_title: split before runs of [-\s({[<], capitalize each piece.
    std::string out;
    bool word_start = true;
    for (const std::string& ch : utf8_chars(to_str(v))) {
        const char c = ch[0];
        const bool separator =
            ch.size() == 1 && (c == '-' || is_py_space(c) || c == '(' || c == '{' || c == '[' || c == '<');
        if (separator) {
            out += ch;
            word_start = true;
        } else {
            out += word_start ? py_upper(ch) : py_lower(ch);
            word_start = false;
        }
    }
    return Value(std::move(out));
}

Value f_tojson(Interpreter& interp, const Value& v, CallArgs& args) {
    JsonDumpOptions options;
    options.max_bytes = interp.options().limits.max_output_bytes;
    const Value* indent = args.get(1, "indent");
    if (indent && !indent->is_none()) {
        options.has_indent = true;
        if (indent->is_string()) {
            options.indent = indent->as_string();
        } else if (indent->is_int()) {
            if (indent->as_int() > 64) fail("tojson indent too large");
            options.indent = std::string(static_cast<size_t>(std::max<int64_t>(0, indent->as_int())), ' ');
        } else {
            fail("tojson indent must be an int or a string");
        }
        options.item_separator = ",";
    }
    const Value* separators = args.get(2, "separators");
    if (separators && !separators->is_none()) {
        if (!separators->is_list() || separators->items().size() != 2) fail("separators must be a pair of strings");
        options.item_separator = to_str(separators->items()[0]);
        options.key_separator = to_str(separators->items()[1]);
    }
    options.sort_keys = bool_param(args, 3, "sort_keys", false);
    options.ensure_ascii = bool_param(args, 0, "ensure_ascii", false);
    if (v.is_undefined()) fail("Object of type Undefined is not JSON serializable");
    std::string json = json_dumps(v, options);
    interp.check_size(json.size());
    interp.charge(json.size());
    return Value(std::move(json));
}

Value f_trim(Interpreter&, const Value& v, CallArgs& args) {
    return Value(py_strip(to_str(v), args.get(0, "chars"), true, true));
}

Value f_truncate(Interpreter& interp, const Value& v, CallArgs& args) {
    if (!v.is_string()) {  // jinja2 takes len() of whatever it gets
        const Value len = v.is_undefined() ? Value(int64_t{0}) : apply_filter(interp, "length", v, args);
        if (len.as_int() <= int_param(args, 0, "length", 255) + int_param(args, 3, "leeway", 5)) return v;
        fail("truncate needs a string, not " + v.type_name());
    }
    const std::string s = to_str(v);
    const int64_t length = int_param(args, 0, "length", 255);
    const bool killwords = bool_param(args, 1, "killwords", false);
    const std::string end = string_param(args, 2, "end", "...");
    const int64_t leeway = int_param(args, 3, "leeway", 5);
    const auto chars = utf8_chars(s);
    const auto end_len = static_cast<int64_t>(utf8_length(end));
    if (length < end_len) fail("expected length >= " + std::to_string(end_len) + ", got " + std::to_string(length));
    if (leeway < 0) fail("expected leeway >= 0, got " + std::to_string(leeway));
    if (static_cast<int64_t>(chars.size()) <= length + leeway) return Value(s);
    std::string head;
    for (int64_t i = 0; i < length - end_len; ++i) head += chars[static_cast<size_t>(i)];
    if (killwords) return Value(head + end);
    const size_t space = head.rfind(' ');
    if (space != std::string::npos) head.resize(space);
    return Value(head + end);
}

Value f_unique(Interpreter& interp, const Value& v, CallArgs& args) {
    const bool case_sensitive = bool_param(args, 0, "case_sensitive", false);
    const Value* attribute = args.get(1, "attribute");
    std::vector<Value> out, seen;
    for (const auto& item : as_list(interp, v)) {
        Value key = sort_key(item, attribute, case_sensitive);
        if ((key.is_list() && !key.is_tuple()) || key.is_dict()) fail("unhashable type: '" + key.type_name() + "'");
        interp.charge(16 * seen.size());  // a linear search per item: quadratic in the list's length
        if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return values_equal(s, key); })) continue;
        seen.push_back(std::move(key));
        out.push_back(item);
    }
    return Value::iterator(std::move(out));
}

Value f_wordcount(Interpreter&, const Value& v, CallArgs&) {
    int64_t count = 0;
    bool in_word = false;
    for (unsigned char c : to_str(v)) {
        const bool word = std::isalnum(c) || c == '_' || c >= 0x80;
        if (word && !in_word) ++count;
        in_word = word;
    }
    return Value(count);
}

Value f_indent(Interpreter& interp, const Value& v, CallArgs& args) {
    if (!v.is_string()) fail("unsupported operand type(s) for +=: '" + v.type_name() + "' and 'str'");
    const Value width = args.get_or(0, "width", Value(int64_t{4}));
    const bool first = bool_param(args, 1, "first", false);
    const bool blank = bool_param(args, 2, "blank", false);
    std::string indentation;
    if (width.is_string()) {
        indentation = width.as_string();
    } else {
        if (!width.is_int() || width.as_int() > 1024) fail("indent width must be a small int or a string");
        indentation = std::string(static_cast<size_t>(std::max<int64_t>(0, width.as_int())), ' ');
    }
    const auto lines = py_splitlines(to_str(v) + "\n");
    // Up to 1024 spaces before each of a few million short lines: check before building.
    interp.check_size(v.as_string().size() + lines.size() * indentation.size());
    interp.charge(v.as_string().size() + lines.size() * indentation.size());
    std::string out;
    if (blank) {
        for (size_t i = 0; i < lines.size(); ++i) {
            if (i) out += "\n" + indentation;
            out += lines[i];
        }
    } else if (!lines.empty()) {
        out = lines[0];
        for (size_t i = 1; i < lines.size(); ++i) {
            out += "\n";
            if (!lines[i].empty()) out += indentation;
            out += lines[i];
        }
    }
    if (first) out = indentation + out;
    return Value(std::move(out));
}

Value f_format(Interpreter& interp, const Value& v, CallArgs& args) {
    if (!args.positional.empty() && !args.keyword.empty())
        fail("can't handle positional and keyword arguments at the same time");
    if (!args.keyword.empty()) {
        auto data = std::make_shared<DictData>();
        for (const auto& [k, val] : args.keyword) data->set(Value(k), val);
        return Value(python_percent_format(interp, to_str(v), Value::dict(std::move(data))));
    }
    return Value(python_percent_format(interp, to_str(v), Value::list(args.positional, true)));
}

bool run_test_or_truthy(Interpreter& interp, const Value& item, const CallArgs& args, size_t name_index) {
    if (args.positional.size() <= name_index) return item.truthy();
    const std::string name = to_str(args.positional[name_index]);
    CallArgs test_args;
    test_args.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(name_index) + 1,
                                args.positional.end());
    test_args.keyword = args.keyword;
    return apply_test(interp, name, item, test_args);
}

Value select_impl(Interpreter& interp, const Value& v, CallArgs& args, bool by_attribute, bool keep) {
    std::vector<Value> out;
    if (!v.truthy()) return Value::iterator({});  // jinja2: `if value:` before iterating
    for (const auto& item : as_list(interp, v)) {
        bool passed;
        if (by_attribute) {
            if (args.positional.empty()) fail("selectattr/rejectattr need an attribute name");
            passed = run_test_or_truthy(interp, lookup_path(item, args.positional[0]), args, 1);
        } else {
            passed = run_test_or_truthy(interp, item, args, 0);
        }
        if (passed == keep) out.push_back(item);
    }
    return Value::iterator(std::move(out));
}
Value f_select(Interpreter& i, const Value& v, CallArgs& a) { return select_impl(i, v, a, false, true); }
Value f_reject(Interpreter& i, const Value& v, CallArgs& a) { return select_impl(i, v, a, false, false); }
Value f_selectattr(Interpreter& i, const Value& v, CallArgs& a) { return select_impl(i, v, a, true, true); }
Value f_rejectattr(Interpreter& i, const Value& v, CallArgs& a) { return select_impl(i, v, a, true, false); }

const std::unordered_map<std::string, Filter>& filters() {
    static const std::unordered_map<std::string, Filter> table = {
        {"abs", f_abs},
        {"attr", f_attr},
        {"batch", f_batch},
        {"capitalize", f_capitalize},
        {"center", f_center},
        {"count", f_length},
        {"length", f_length},
        {"d", f_default},
        {"default", f_default},
        {"dictsort", f_dictsort},
        {"e", f_escape},
        {"escape", f_escape},
        {"forceescape", f_forceescape},
        {"first", f_first},
        {"last", f_last},
        {"float", f_float},
        {"int", f_int},
        {"items", f_items},
        {"join", f_join},
        {"list", f_list},
        {"lower", f_lower},
        {"upper", f_upper},
        {"map", f_map},
        {"max", f_max},
        {"min", f_min},
        {"replace", f_replace},
        {"reverse", f_reverse},
        {"round", f_round},
        {"safe", f_safe},
        {"sort", f_sort},
        {"string", f_string},
        {"sum", f_sum},
        {"title", f_title},
        {"tojson", f_tojson},
        {"trim", f_trim},
        {"truncate", f_truncate},
        {"unique", f_unique},
        {"wordcount", f_wordcount},
        {"indent", f_indent},
        {"format", f_format},
        {"select", f_select},
        {"reject", f_reject},
        {"selectattr", f_selectattr},
        {"rejectattr", f_rejectattr},
    };
    return table;
}

// ---- tests -------------------------------------------------------------------------------------

const Value& test_arg(const CallArgs& args, const char* test) {
    if (args.positional.empty()) fail(std::string("test '") + test + "' needs an argument");
    return args.positional[0];
}

// value % divisor == 0, with Python's % on ints and floats.
bool divisible(const Value& v, const Value& divisor, Interpreter& interp) {
    if (v.is_undefined()) fail_undefined(v);
    return values_equal(binary_op("%", v, divisor, interp), Value(int64_t{0}));
}

int compare_for_test(const Value& v, const CallArgs& args, const char* op) {
    return compare_values(v, test_arg(args, op), op);
}

const std::unordered_map<std::string, Test>& tests() {
    static const std::unordered_map<std::string, Test> table = {
        {"defined", [](Interpreter&, const Value& v, CallArgs&) { return !v.is_undefined(); }},
        {"undefined", [](Interpreter&, const Value& v, CallArgs&) { return v.is_undefined(); }},
        {"none", [](Interpreter&, const Value& v, CallArgs&) { return v.is_none(); }},
        {"boolean", [](Interpreter&, const Value& v, CallArgs&) { return v.is_bool(); }},
        {"true", [](Interpreter&, const Value& v, CallArgs&) { return v.is_bool() && v.as_bool(); }},
        {"false", [](Interpreter&, const Value& v, CallArgs&) { return v.is_bool() && !v.as_bool(); }},
        {"string", [](Interpreter&, const Value& v, CallArgs&) { return v.is_string(); }},
        {"number", [](Interpreter&, const Value& v, CallArgs&) { return v.is_number(); }},
        {"integer", [](Interpreter&, const Value& v, CallArgs&) { return v.is_int(); }},
        {"float", [](Interpreter&, const Value& v, CallArgs&) { return v.is_float(); }},
        {"mapping", [](Interpreter&, const Value& v, CallArgs&) { return v.is_dict(); }},
        {"iterable",
         [](Interpreter&, const Value& v, CallArgs&) {
             return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict() || v.is_iterator();
         }},
        {"sequence", [](Interpreter&, const Value& v,
                        CallArgs&) { return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict(); }},
        {"callable", [](Interpreter&, const Value& v, CallArgs&) { return v.is_function() || v.is_undefined(); }},
        {"lower", [](Interpreter&, const Value& v, CallArgs&) { return py_islower(to_str(v)); }},
        {"upper", [](Interpreter&, const Value& v, CallArgs&) { return py_isupper(to_str(v)); }},
        {"escaped", [](Interpreter&, const Value&, CallArgs&) { return false; }},
        {"even", [](Interpreter& in, const Value& v, CallArgs&) { return divisible(v, Value(int64_t{2}), in); }},
        {"odd",
         [](Interpreter& in, const Value& v, CallArgs&) {
             if (v.is_undefined()) fail_undefined(v);
             return values_equal(binary_op("%", v, Value(int64_t{2}), in), Value(int64_t{1}));
         }},
        {"divisibleby",
         [](Interpreter& in, const Value& v, CallArgs& a) { return divisible(v, test_arg(a, "divisibleby"), in); }},
        {"eq", [](Interpreter&, const Value& v, CallArgs& a) { return values_equal(v, test_arg(a, "eq")); }},
        {"ne", [](Interpreter&, const Value& v, CallArgs& a) { return !values_equal(v, test_arg(a, "ne")); }},
        {"lt", [](Interpreter&, const Value& v, CallArgs& a) { return compare_for_test(v, a, "<") < 0; }},
        {"le", [](Interpreter&, const Value& v, CallArgs& a) { return compare_for_test(v, a, "<=") <= 0; }},
        {"gt", [](Interpreter&, const Value& v, CallArgs& a) { return compare_for_test(v, a, ">") > 0; }},
        {"ge", [](Interpreter&, const Value& v, CallArgs& a) { return compare_for_test(v, a, ">=") >= 0; }},
        {"in", [](Interpreter&, const Value& v, CallArgs& a) { return contains(test_arg(a, "in"), v); }},
        {"sameas",
         [](Interpreter&, const Value& v, CallArgs& a) {
             const Value& other = test_arg(a, "sameas");
             if (v.kind() != other.kind()) return false;
             if (v.is_list() || v.is_dict() || v.is_function() || v.is_namespace())
                 return values_equal(v, other) && to_repr(v) == to_repr(other);
             return values_equal(v, other);
         }},
        {"filter",
         [](Interpreter&, const Value& v, CallArgs&) { return v.is_string() && filters().count(v.as_string()) > 0; }},
        {"test",
         [](Interpreter&, const Value& v, CallArgs&) { return v.is_string() && tests().count(v.as_string()) > 0; }},
    };
    return table;
}

const std::unordered_map<std::string, std::string>& test_aliases() {
    static const std::unordered_map<std::string, std::string> table = {
        {"==", "eq"}, {"equalto", "eq"}, {"!=", "ne"},          {"<", "lt"},  {"lessthan", "lt"},
        {"<=", "le"}, {">", "gt"},       {"greaterthan", "gt"}, {">=", "ge"},
    };
    return table;
}

// ---- globals -----------------------------------------------------------------------------------

Value g_range(Interpreter& interp, CallArgs& args) {
    std::vector<int64_t> bounds;
    for (const auto& v : args.positional) {
        if (!v.is_int() && !v.is_bool()) fail("'" + v.type_name() + "' object cannot be interpreted as an integer");
        bounds.push_back(v.as_int());
    }
    int64_t start = 0, stop = 0, step = 1;
    if (bounds.size() == 1) {
        stop = bounds[0];
    } else if (bounds.size() == 2 || bounds.size() == 3) {
        start = bounds[0];
        stop = bounds[1];
        if (bounds.size() == 3) step = bounds[2];
    } else {
        fail("range expected 1 to 3 arguments, got " + std::to_string(bounds.size()));
    }
    if (step == 0) fail("range() arg 3 must not be zero");
    const long double count_ld = step > 0 ? (static_cast<long double>(stop) - start + step - 1) / step
                                          : (static_cast<long double>(start) - stop - step - 1) / -step;
    const int64_t count = count_ld > 0 ? static_cast<int64_t>(count_ld) : 0;
    if (count > 100000) fail_limit("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    interp.check_size(static_cast<size_t>(count) * 16);
    std::vector<Value> out;
    for (int64_t i = 0; i < count; ++i) out.emplace_back(start + i * step);
    return Value::list(std::move(out));
}

constexpr size_t kEntryCost = 128;  // an insert into a DictData costs about as much as copying this many bytes

std::shared_ptr<DictData> dict_from_args(Interpreter& interp, CallArgs& args, std::shared_ptr<DictData> data) {
    if (args.positional.size() > 1) fail("dict expected at most 1 argument");
    if (!args.positional.empty()) {
        const Value& source = args.positional[0];
        // dict(d, k=v) in a loop copies d every time; an entry costs a hash-table insert besides its bytes.
        const size_t entries = source.is_dict()   ? source.dict_data().size()
                               : source.is_list() ? source.items().size()
                                                  : 0;
        interp.charge(source.approx_bytes() + entries * kEntryCost);
        if (source.is_dict()) {
            for (const auto& [k, v] : source.dict_data().entries()) data->set(k, v);
        } else if (source.is_list()) {
            for (const auto& pair : source.items()) {
                if (!pair.is_list() || pair.items().size() != 2)
                    fail("dictionary update sequence element has wrong length");
                data->set(pair.items()[0], pair.items()[1]);
            }
        } else {
            fail("'" + source.type_name() + "' object is not iterable");
        }
    }
    for (const auto& [k, v] : args.keyword) data->set(Value(k), v);
    interp.check_size(16 + data->bytes());
    return data;
}

Value g_strftime_now(Interpreter& interp, CallArgs& args) {
    if (args.positional.empty() || !args.positional[0].is_string()) fail("strftime_now() needs a format string");
    const std::string& format = args.positional[0].as_string();
    if (format.size() > 256) fail("strftime_now() format too long");
    const auto now = interp.options().now ? interp.options().now() : std::chrono::system_clock::now();
    const std::time_t t = std::chrono::system_clock::to_time_t(now);
    std::tm local{};
    localtime_r(&t, &local);
    if (format.empty()) return Value(std::string());
    char buf[4096];
    const size_t n = std::strftime(buf, sizeof buf, format.c_str(), &local);
    return Value(std::string(buf, n));
}

// Filters that print their input and work on the text: a list or dict given to one is printed first.
bool reads_input_as_text(const std::string& filter) {
    static const std::unordered_set<std::string> text_filters = {
        "capitalize", "center", "e",     "escape", "forceescape", "lower",  "upper",  "replace",
        "safe",       "string", "title", "trim",   "truncate",    "indent", "format", "wordcount",
    };
    return text_filters.count(filter) > 0;
}

// What a test reads, charged as apply_filter charges a filter: `is lower` scans the string (as text, so any
// value), `is eq` / `is in` compare as the operators do, `is sameas` prints both sides.
size_t test_cost(const std::string& test, const Value& value, const CallArgs& args) {
    if (test == "lower" || test == "upper") return value.approx_bytes() * kStringScanCost;
    if (args.positional.empty()) return 0;
    const Value& other = args.positional[0];
    if (test == "in") return comparison_cost("in", value, other);
    if (test == "sameas") return value.approx_bytes() + other.approx_bytes();
    if (test == "eq" || test == "ne" || test == "lt" || test == "le" || test == "gt" || test == "ge")
        return comparison_cost("==", value, other);
    return 0;
}

}  // namespace

Value apply_filter(Interpreter& interp, const std::string& name, const Value& value, CallArgs& args) {
    auto it = filters().find(name);
    if (it == filters().end()) fail("No filter named '" + name + "'.");
    // String filters read the whole string (lists pay when iterated): a loop over a long one pays for it. A
    // list or dict printed for a text filter pays as its printed text would.
    if (value.is_string()) interp.charge(value.as_string().size() * kStringScanCost);
    if (!value.is_string() && reads_input_as_text(name)) interp.charge(value.approx_bytes() * kStringScanCost);
    return it->second(interp, value, args);
}

bool apply_test(Interpreter& interp, const std::string& name, const Value& value, CallArgs& args) {
    auto alias = test_aliases().find(name);
    const std::string& resolved = alias == test_aliases().end() ? name : alias->second;
    auto it = tests().find(resolved);
    if (it == tests().end()) fail("No test named '" + name + "'.");
    interp.charge(test_cost(resolved, value, args));
    return it->second(interp, value, args);
}

void install_globals(Scope& root) {
    root.vars["range"] = Value::function("range", g_range);
    root.vars["dict"] = Value::function("dict", [](Interpreter& in, CallArgs& args) {
        return Value::dict(dict_from_args(in, args, std::make_shared<DictData>()));
    });
    root.vars["namespace"] = Value::function("namespace", [](Interpreter& in, CallArgs& args) {
        return Value::namespace_object(dict_from_args(in, args, in.new_namespace()));
    });
    root.vars["raise_exception"] = Value::function("raise_exception", [](Interpreter&, CallArgs& args) -> Value {
        throw TemplateError{args.positional.empty() ? std::string() : to_str(args.positional[0]), 0,
                            ErrorCause::Raised};
    });
    root.vars["strftime_now"] = Value::function("strftime_now", g_strftime_now);
}

}  // namespace tempered::jinja
