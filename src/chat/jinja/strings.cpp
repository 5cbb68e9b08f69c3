// Python str methods reachable from templates ('a,b'.split(','), s.strip(), '{}'.format(x), ...)
// and printf-style '%' formatting (used by the `format` filter and by str % args).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <optional>

#include "chat/jinja/interpreter.h"
#include "chat/jinja/strings.h"

namespace tempered::jinja {

bool is_py_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || (c >= 0x1c && c <= 0x1f);
}

// Simple case mapping for ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic (what Python's
// str.lower/upper do there, except the few one-to-many mappings other than 'ß' -> "SS").
static uint32_t map_case(uint32_t cp, bool to_upper) {
    if (cp < 0x80) {
        if (to_upper && cp >= 'a' && cp <= 'z') return cp - 32;
        if (!to_upper && cp >= 'A' && cp <= 'Z') return cp + 32;
        return cp;
    }
    if (cp >= 0xC0 && cp <= 0xFE && cp != 0xD7 && cp != 0xF7 && cp != 0xDF) {
        if (to_upper && cp >= 0xE0) return cp - 0x20;
        if (!to_upper && cp <= 0xDE) return cp + 0x20;
        return cp;
    }
    if (cp == 0xFF && to_upper) return 0x178;
    if (cp == 0x178 && !to_upper) return 0xFF;
    const bool even_upper = (cp >= 0x100 && cp <= 0x137) || (cp >= 0x14A && cp <= 0x177);
    const bool odd_upper = (cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E);
    if (even_upper || odd_upper) {
        const bool is_upper = (cp % 2 == 0) == even_upper;
        if (to_upper && !is_upper) return cp - 1;
        if (!to_upper && is_upper) return cp + 1;
        return cp;
    }
    if (cp >= 0x391 && cp <= 0x3A9 && cp != 0x3A2 && !to_upper) return cp + 0x20;
    if (cp >= 0x3B1 && cp <= 0x3C9 && to_upper) return cp == 0x3C2 ? 0x3A3 : cp - 0x20;
    if (cp >= 0x410 && cp <= 0x42F && !to_upper) return cp + 0x20;
    if (cp >= 0x430 && cp <= 0x44F && to_upper) return cp - 0x20;
    if (cp >= 0x400 && cp <= 0x40F && !to_upper) return cp + 0x50;
    if (cp >= 0x450 && cp <= 0x45F && to_upper) return cp - 0x50;
    return cp;
}

static void append_code_point(uint32_t cp, std::string& out) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

// Maps one UTF-8 character (as split by utf8_chars) to its upper or lower case.
static std::string map_char(const std::string& ch, bool to_upper) {
    const auto b0 = static_cast<unsigned char>(ch[0]);
    if (ch.size() == 1) return std::string(1, static_cast<char>(map_case(b0, to_upper)));
    if (ch.size() != 2) return ch;  // outside the mapped ranges
    const uint32_t cp = ((b0 & 0x1Fu) << 6) | (static_cast<unsigned char>(ch[1]) & 0x3Fu);
    if (cp == 0xDF && to_upper) return "SS";
    std::string out;
    append_code_point(map_case(cp, to_upper), out);
    return out;
}

static std::string map_string(const std::string& s, bool to_upper) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        const auto lead = static_cast<unsigned char>(s[i]);
        if (lead < 0x80) {  // ASCII without building a string per character
            out += static_cast<char>(map_case(lead, to_upper));
            ++i;
            continue;
        }
        const size_t n = std::min(utf8_sequence_length(lead), s.size() - i);
        out += map_char(s.substr(i, n), to_upper);
        i += n;
    }
    return out;
}

std::string py_lower(std::string s) { return map_string(s, false); }
std::string py_upper(std::string s) { return map_string(s, true); }

static bool is_cased_char(const std::string& ch) {
    if (ch.size() == 1) return std::isalpha(static_cast<unsigned char>(ch[0])) != 0;
    return map_char(ch, true) != ch || map_char(ch, false) != ch || ch.size() > 1;
}

std::string py_capitalize(const std::string& s) {
    std::string out;
    bool first = true;
    for (const std::string& ch : utf8_chars(s)) {
        out += map_char(ch, first);
        first = false;
    }
    return out;
}

std::string py_title(const std::string& s) {
    std::string out;
    bool previous_cased = false;
    for (const std::string& ch : utf8_chars(s)) {
        out += map_char(ch, !previous_cased);
        previous_cased = is_cased_char(ch);
    }
    return out;
}

std::string py_strip(const std::string& s, const Value* chars, bool left, bool right) {
    if (chars && !chars->is_none()) {
        if (!chars->is_string()) fail("strip arg must be None or str");
        const std::vector<std::string> set = utf8_chars(chars->as_string());
        std::vector<std::string> cs = utf8_chars(s);
        size_t b = 0, e = cs.size();
        const auto in_set = [&](const std::string& ch) { return std::find(set.begin(), set.end(), ch) != set.end(); };
        if (left) {
            while (b < e && in_set(cs[b])) ++b;
        }
        if (right) {
            while (e > b && in_set(cs[e - 1])) --e;
        }
        std::string out;
        for (size_t i = b; i < e; ++i) out += cs[i];
        return out;
    }
    size_t b = 0, e = s.size();
    if (left) {
        while (b < e && is_py_space(s[b])) ++b;
    }
    if (right) {
        while (e > b && is_py_space(s[e - 1])) --e;
    }
    return s.substr(b, e - b);
}

std::vector<std::string> py_split(const std::string& s, const Value* sep, int64_t maxsplit) {
    std::vector<std::string> out;
    if (!sep || sep->is_none()) {
        size_t i = 0;
        while (i < s.size()) {
            while (i < s.size() && is_py_space(s[i])) ++i;
            if (i >= s.size()) break;
            if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
                size_t e = s.size();
                while (e > i && is_py_space(s[e - 1])) --e;
                out.push_back(s.substr(i, e - i));
                break;
            }
            size_t j = i;
            while (j < s.size() && !is_py_space(s[j])) ++j;
            out.push_back(s.substr(i, j - i));
            i = j;
        }
        return out;
    }
    if (!sep->is_string()) fail("must be str or None, not " + sep->type_name());
    const std::string& d = sep->as_string();
    if (d.empty()) fail("empty separator");
    size_t start = 0;
    while (true) {
        if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) break;
        const size_t found = s.find(d, start);
        if (found == std::string::npos) break;
        out.push_back(s.substr(start, found - start));
        start = found + d.size();
    }
    out.push_back(s.substr(start));
    return out;
}

std::vector<std::string> py_splitlines(const std::string& s) {
    std::vector<std::string> out;
    std::string line;
    for (size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (c == '\n' || c == '\r' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1e)) {
            out.push_back(line);
            line.clear();
            if (c == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
        } else {
            line += c;
        }
    }
    if (!line.empty()) out.push_back(line);
    return out;
}

std::string py_replace(const std::string& s, const std::string& old, const std::string& replacement, int64_t count,
                       size_t max_bytes) {
    const auto check = [&](const std::string& out) {
        if (out.size() > max_bytes) fail_output_size(max_bytes);
    };
    std::string out;
    if (old.empty()) {
        int64_t done = 0;
        for (const std::string& ch : utf8_chars(s)) {
            if (count < 0 || done < count) {
                out += replacement;
                ++done;
            }
            out += ch;
            check(out);
        }
        if (count < 0 || done < count) out += replacement;
        return out;
    }
    size_t start = 0;
    int64_t done = 0;
    while (count < 0 || done < count) {
        const size_t found = s.find(old, start);
        if (found == std::string::npos) break;
        out.append(s, start, found - start);
        out += replacement;
        check(out);
        start = found + old.size();
        ++done;
    }
    out.append(s, start, std::string::npos);
    return out;
}

std::string py_center(const std::string& s, int64_t width, const std::string& fill) {
    const auto len = static_cast<int64_t>(utf8_length(s));
    if (width <= len) return s;
    const int64_t margin = width - len;
    const int64_t left = margin / 2 + (margin & width & 1);
    std::string out;
    for (int64_t i = 0; i < left; ++i) out += fill;
    out += s;
    for (int64_t i = 0; i < margin - left; ++i) out += fill;
    return out;
}

static bool starts_or_ends_with(const std::string& s, const Value& affix, bool start) {
    const auto test = [&](const Value& v) {
        if (!v.is_string())
            fail(std::string(start ? "startswith" : "endswith") + " first arg must be str or a tuple of str");
        const std::string& a = v.as_string();
        if (a.size() > s.size()) return false;
        return start ? s.compare(0, a.size(), a) == 0 : s.compare(s.size() - a.size(), a.size(), a) == 0;
    };
    if (affix.is_tuple()) {
        for (const auto& v : affix.items()) {
            if (test(v)) return true;
        }
        return false;
    }
    return test(affix);
}

static int64_t int_arg(const CallArgs& args, size_t index, const char* name, int64_t fallback) {
    const Value* v = args.get(index, name);
    if (!v || v->is_none()) return fallback;
    if (!v->is_int() && !v->is_bool())
        fail(std::string("'") + v->type_name() + "' object cannot be interpreted as an integer");
    return v->as_int();
}

static const Value& required(const CallArgs& args, size_t index, const char* method) {
    if (index >= args.positional.size()) fail(std::string(method) + "() missing required argument");
    return args.positional[index];
}

static const std::string& required_string(const CallArgs& args, size_t index, const char* method) {
    const Value& v = required(args, index, method);
    if (!v.is_string()) fail(std::string(method) + "() argument must be str, not " + v.type_name());
    return v.as_string();
}

static std::string str_format(Interpreter& interp, const std::string& format, CallArgs& args) {
    std::string out;
    size_t auto_index = 0;
    for (size_t i = 0; i < format.size(); ++i) {
        const char c = format[i];
        if (c == '{' && i + 1 < format.size() && format[i + 1] == '{') {
            out += '{';
            ++i;
            continue;
        }
        if (c == '}' && i + 1 < format.size() && format[i + 1] == '}') {
            out += '}';
            ++i;
            continue;
        }
        if (c == '}') fail("Single '}' encountered in format string");
        if (c != '{') {
            out += c;
            continue;
        }
        const size_t close = format.find('}', i);
        if (close == std::string::npos) fail("Single '{' encountered in format string");
        std::string field = format.substr(i + 1, close - i - 1);
        i = close;
        if (field.find_first_of(":!") != std::string::npos)
            fail("format specifications are not supported in str.format");
        Value v;
        if (field.empty()) {
            if (auto_index >= args.positional.size())
                fail("Replacement index " + std::to_string(auto_index) + " out of range");
            v = args.positional[auto_index++];
        } else if (std::all_of(field.begin(), field.end(), [](char d) { return d >= '0' && d <= '9'; })) {
            const size_t index = std::stoul(field);
            if (index >= args.positional.size()) fail("Replacement index " + field + " out of range");
            v = args.positional[index];
        } else {
            const Value* found = args.get(SIZE_MAX, field);
            if (!found) fail("KeyError: '" + field + "'");
            v = *found;
        }
        out += to_str(v);
        interp.check_size(out.size());  // "{0}{0}{0}…" repeats one argument as often as the format is long
    }
    interp.charge(out.size());
    return out;
}

namespace {

// str.count: non-overlapping occurrences; an empty needle matches between every character.
int64_t py_count(const std::string& s, const std::string& needle) {
    if (needle.empty()) return static_cast<int64_t>(utf8_length(s) + 1);
    int64_t n = 0;
    for (size_t at = s.find(needle); at != std::string::npos; at = s.find(needle, at + needle.size())) ++n;
    return n;
}

// str.join over a list, a dict's keys or a string's characters; every item must be a string.
std::string py_join(Interpreter& interp, const std::string& separator, const Value& sequence) {
    std::vector<Value> items;
    if (sequence.is_list())
        items = sequence.items();
    else if (sequence.is_dict())
        for (const auto& kv : sequence.dict_data().entries()) items.push_back(kv.first);
    else if (sequence.is_string())
        for (auto& ch : utf8_chars(sequence.as_string())) items.emplace_back(std::move(ch));
    else
        fail("can only join an iterable");
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
        if (!items[i].is_string())
            fail("sequence item " + std::to_string(i) + ": expected str instance, " + items[i].type_name() + " found");
        if (i) out += separator;
        out += items[i].as_string();
        interp.check_size(out.size());  // a long separator between many items
    }
    interp.charge(out.size());
    return out;
}

}  // namespace

Value string_method(const Value& string, const std::string& name) {
    using Fn = std::function<Value(Interpreter&, const std::string&, CallArgs&)>;
    static const std::unordered_map<std::string, Fn> methods = {
        {"strip", [](Interpreter&, const std::string& s,
                     CallArgs& a) { return Value(py_strip(s, a.get(0, "chars"), true, true)); }},
        {"lstrip", [](Interpreter&, const std::string& s,
                      CallArgs& a) { return Value(py_strip(s, a.get(0, "chars"), true, false)); }},
        {"rstrip", [](Interpreter&, const std::string& s,
                      CallArgs& a) { return Value(py_strip(s, a.get(0, "chars"), false, true)); }},
        {"upper", [](Interpreter&, const std::string& s, CallArgs&) { return Value(py_upper(s)); }},
        {"lower", [](Interpreter&, const std::string& s, CallArgs&) { return Value(py_lower(s)); }},
        {"title", [](Interpreter&, const std::string& s, CallArgs&) { return Value(py_title(s)); }},
        {"capitalize", [](Interpreter&, const std::string& s, CallArgs&) { return Value(py_capitalize(s)); }},
        {"split",
         [](Interpreter&, const std::string& s, CallArgs& a) {
             std::vector<Value> out;
             for (auto& part : py_split(s, a.get(0, "sep"), int_arg(a, 1, "maxsplit", -1)))
                 out.emplace_back(std::move(part));
             return Value::list(std::move(out));
         }},
        {"splitlines",
         [](Interpreter&, const std::string& s, CallArgs&) {
             std::vector<Value> out;
             for (auto& line : py_splitlines(s)) out.emplace_back(std::move(line));
             return Value::list(std::move(out));
         }},
        {"startswith", [](Interpreter&, const std::string& s,
                          CallArgs& a) { return Value(starts_or_ends_with(s, required(a, 0, "startswith"), true)); }},
        {"endswith", [](Interpreter&, const std::string& s,
                        CallArgs& a) { return Value(starts_or_ends_with(s, required(a, 0, "endswith"), false)); }},
        {"replace",
         [](Interpreter& in, const std::string& s, CallArgs& a) {
             return Value(py_replace(s, required_string(a, 0, "replace"), required_string(a, 1, "replace"),
                                     int_arg(a, 2, "count", -1), in.options().limits.max_output_bytes));
         }},
        {"find",
         [](Interpreter&, const std::string& s, CallArgs& a) {
             const size_t at = s.find(required_string(a, 0, "find"));
             return Value(at == std::string::npos ? int64_t{-1} : static_cast<int64_t>(utf8_length(s.substr(0, at))));
         }},
        {"rfind",
         [](Interpreter&, const std::string& s, CallArgs& a) {
             const size_t at = s.rfind(required_string(a, 0, "rfind"));
             return Value(at == std::string::npos ? int64_t{-1} : static_cast<int64_t>(utf8_length(s.substr(0, at))));
         }},
        {"count", [](Interpreter&, const std::string& s,
                     CallArgs& a) { return Value(py_count(s, required_string(a, 0, "count"))); }},
        {"join", [](Interpreter& in, const std::string& s,
                    CallArgs& a) { return Value(py_join(in, s, required(a, 0, "join"))); }},
        {"format", [](Interpreter& in, const std::string& s, CallArgs& a) { return Value(str_format(in, s, a)); }},
        {"center",
         [](Interpreter& in, const std::string& s, CallArgs& a) {
             const Value fill = a.get_or(1, "fillchar", Value(" "));
             const int64_t width = int_arg(a, 0, "width", 0);
             in.check_size(static_cast<size_t>(std::max<int64_t>(width, 0)));
             return Value(py_center(s, width, fill.is_string() ? fill.as_string() : " "));
         }},
        {"isdigit",
         [](Interpreter&, const std::string& s, CallArgs&) {
             return Value(!s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }));
         }},
        {"isalpha",
         [](Interpreter&, const std::string& s, CallArgs&) {
             return Value(!s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
                 return std::isalpha(static_cast<unsigned char>(c)) != 0;
             }));
         }},
        {"isalnum",
         [](Interpreter&, const std::string& s, CallArgs&) {
             return Value(!s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
                 return std::isalnum(static_cast<unsigned char>(c)) != 0;
             }));
         }},
        {"isspace", [](Interpreter&, const std::string& s,
                       CallArgs&) { return Value(!s.empty() && std::all_of(s.begin(), s.end(), is_py_space)); }},
        {"islower", [](Interpreter&, const std::string& s, CallArgs&) { return Value(py_islower(s)); }},
        {"isupper", [](Interpreter&, const std::string& s, CallArgs&) { return Value(py_isupper(s)); }},
    };
    auto it = methods.find(name);
    if (it == methods.end()) return Value();
    const Fn fn = it->second;
    // Every method reads the whole string at least once: a loop calling one on a long string pays for it.
    // The closure holds the shared string, so that `s.upper` not called costs no copy of s.
    return Value::function(name, [string, fn](Interpreter& in, CallArgs& args) {
        in.charge(string.as_string().size() * kStringScanCost);
        return fn(in, string.as_string(), args);
    });
}

bool py_islower(const std::string& s) {
    bool cased = false;
    for (unsigned char c : s) {
        if (std::isupper(c)) return false;
        cased = cased || std::islower(c);
    }
    return cased;
}

bool py_isupper(const std::string& s) {
    bool cased = false;
    for (unsigned char c : s) {
        if (std::islower(c)) return false;
        cased = cased || std::isupper(c);
    }
    return cased;
}

// ---- printf-style formatting -----------------------------------------------------------------------

namespace {

// One conversion of a %-format: "%" flags width "." precision, already split out of the format string.
struct PercentSpec {
    std::string flags;
    std::string width;
    std::string precision;  // "" when absent
    char conversion = 's';
};

std::string format_percent_string(const PercentSpec& spec, const Value& value) {
    std::string text = spec.conversion == 's' ? to_str(value) : to_repr(value);
    if (!spec.precision.empty()) {
        const auto chars = utf8_chars(text);
        const size_t keep = std::min(chars.size(), static_cast<size_t>(std::stoul(spec.precision)));
        text.clear();
        for (size_t k = 0; k < keep; ++k) text += chars[k];
    }
    const size_t len = utf8_length(text);
    const size_t w = spec.width.empty() ? 0 : std::stoul(spec.width);
    if (len < w) {
        if (spec.flags.find('-') != std::string::npos)
            text += std::string(w - len, ' ');
        else
            text = std::string(w - len, ' ') + text;
    }
    return text;
}

// Formats one value as Python's % operator does for the conversion in `spec`.
std::string format_percent_value(const PercentSpec& spec, const Value& value) {
    const char conversion = spec.conversion;
    const std::string printf_spec =
        "%" + spec.flags + spec.width + (spec.precision.empty() ? "" : "." + spec.precision);
    char buf[512];
    switch (conversion) {
        case 's':
        case 'r': return format_percent_string(spec, value);
        case 'd':
        case 'i':
        case 'x':
        case 'X':
        case 'o': {
            if (!value.is_number())
                fail("%" + std::string(1, conversion) + " format: a real number is required, not " + value.type_name());
            const auto n = value.is_float() ? static_cast<long long>(std::trunc(value.as_double()))
                                            : static_cast<long long>(value.as_int());
            const char c = conversion == 'i' ? 'd' : conversion;
            std::snprintf(buf, sizeof buf, (printf_spec + "ll" + c).c_str(), n);
            return buf;
        }
        case 'f':
        case 'F':
        case 'e':
        case 'E':
        case 'g':
        case 'G': {
            if (!value.is_number()) fail("must be real number, not " + value.type_name());
            std::snprintf(buf, sizeof buf, (printf_spec + conversion).c_str(), value.as_double());
            return buf;
        }
        case 'c': {
            if (!value.is_string()) fail("%c requires int or char");
            return value.as_string();
        }
        default: fail(std::string("unsupported format character '") + conversion + "'");
    }
    return {};
}

// Reads flags, width and precision after a '%' (and its optional "(key)"); `i` ends on the conversion.
PercentSpec read_percent_spec(const std::string& format, size_t& i) {
    PercentSpec spec;
    while (i < format.size() && std::string_view("-+ #0").find(format[i]) != std::string_view::npos)
        spec.flags += format[i++];
    while (i < format.size() && std::isdigit(static_cast<unsigned char>(format[i]))) spec.width += format[i++];
    if (i < format.size() && format[i] == '.') {
        ++i;
        while (i < format.size() && std::isdigit(static_cast<unsigned char>(format[i]))) spec.precision += format[i++];
        if (spec.precision.empty()) spec.precision = "0";
    }
    if (i >= format.size()) fail("incomplete format");
    spec.conversion = format[i];
    return spec;
}

}  // namespace

std::string python_percent_format(Interpreter& interp, const std::string& format, const Value& args) {
    std::vector<Value> positional;
    const Value* mapping = nullptr;
    if (args.is_tuple()) {
        positional = args.items();
    } else if (args.is_dict()) {
        mapping = &args;
        positional.push_back(args);
    } else {
        positional.push_back(args);
    }
    size_t next = 0;
    std::string out;
    for (size_t i = 0; i < format.size(); ++i) {
        if (format[i] != '%') {
            out += format[i];
            continue;
        }
        if (++i >= format.size()) fail("incomplete format");
        std::optional<Value> value;
        if (format[i] == '(') {
            const size_t close = format.find(')', i);
            if (close == std::string::npos || !mapping) fail("format requires a mapping");
            const Value* found = mapping->dict_data().find(std::string_view(format.data() + i + 1, close - i - 1));
            if (!found) fail("KeyError: '" + format.substr(i + 1, close - i - 1) + "'");
            value = *found;
            i = close + 1;
        }
        const PercentSpec spec = read_percent_spec(format, i);
        if (spec.conversion == '%') {
            out += '%';
            continue;
        }
        if (!value) {
            if (next >= positional.size()) fail("not enough arguments for format string");
            value = positional[next++];
        }
        if (spec.width.size() > 4 || spec.precision.size() > 4) fail("format width too large");
        out += format_percent_value(spec, *value);
        interp.check_size(out.size());  // "%9999s" repeated: each conversion is bounded, their sum is not
    }
    interp.charge(out.size());
    // Python skips this check when the argument has __getitem__ (dict, list), as for a mapping.
    const bool subscriptable = args.is_dict() || (args.is_list() && !args.is_tuple()) || args.is_undefined();
    if (!subscriptable && next < positional.size()) fail("not all arguments converted during string formatting");
    return out;
}

}  // namespace tempered::jinja
