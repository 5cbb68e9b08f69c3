#include "chat/jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace tempered::jinja {

// ---- DictData --------------------------------------------------------------------------------------

size_t DictData::size() const { return entries_.size(); }

// Lookups and inserts hash a string key, or compare a non-string one with every key in turn: a template
// looking up a long key in a loop pays for each read (outside a render nothing is charged).
const Value* DictData::find(std::string_view key) const {
    charge_active_render(key.size());
    auto it = string_index_.find(key);
    return it == string_index_.end() ? nullptr : &entries_[it->second].second;
}

const Value* DictData::find(const Value& key) const {
    if (key.is_string()) return find(std::string_view(key.as_string()));
    charge_active_render(bytes_ + key.approx_bytes());
    for (const auto& [k, v] : entries_) {
        if (values_equal(k, key)) return &v;
    }
    return nullptr;
}

static size_t saturating_add(size_t a, size_t b) { return a + b < a ? SIZE_MAX : a + b; }

void DictData::set(const Value& key, Value value) {
    depth_ = std::max(depth_, 1 + std::max(key.depth(), value.depth()));
    if (depth_ > kMaxValueDepth) fail_limit("value nesting too deep");
    bytes_ = saturating_add(bytes_, saturating_add(key.approx_bytes(), value.approx_bytes()));
    if (key.is_string()) {
        charge_active_render(key.as_string().size());
        auto it = string_index_.find(std::string_view(key.as_string()));
        if (it != string_index_.end()) {
            entries_[it->second].second = std::move(value);
            return;
        }
        string_index_.emplace(key.as_string(), entries_.size());
        entries_.emplace_back(key, std::move(value));
        return;
    }
    charge_active_render(bytes_ + key.approx_bytes());
    for (auto& [k, v] : entries_) {
        if (values_equal(k, key)) {
            v = std::move(value);
            return;
        }
    }
    entries_.emplace_back(key, std::move(value));
}

// ---- construction ----------------------------------------------------------------------------------

Value Value::undefined(std::string hint) {
    Value v;
    if (!hint.empty()) v.string_ = std::make_shared<const std::string>(std::move(hint));
    return v;
}
Value Value::none() {
    Value v;
    v.kind_ = Kind::None;
    return v;
}
Value::Value(bool b) : kind_(Kind::Bool), bool_(b) {}
Value::Value(int64_t i) : kind_(Kind::Int), int_(i) {}
Value::Value(double f) : kind_(Kind::Float), float_(f) {}
Value::Value(std::string s) : kind_(Kind::String), string_(std::make_shared<const std::string>(std::move(s))) {}

const std::string& Value::empty_string() {
    static const std::string empty;
    return empty;
}

Value Value::list(std::vector<Value> items, bool is_tuple) {
    Value v;
    v.kind_ = Kind::List;
    size_t bytes = 16;
    int depth = 1;
    for (const Value& item : items) {
        bytes = saturating_add(bytes, item.approx_bytes());
        depth = std::max(depth, 1 + item.depth());
    }
    if (depth > kMaxValueDepth) fail_limit("value nesting too deep");
    v.list_ = std::make_shared<ListData>(ListData{std::move(items), is_tuple, bytes, depth});
    return v;
}
Value Value::markup(std::string s) {
    Value v(std::move(s));
    v.bool_ = true;
    return v;
}

Value Value::iterator(std::vector<Value> items) {
    Value v = list(std::move(items));
    v.kind_ = Kind::Iterator;
    return v;
}

Value Value::dict(std::shared_ptr<DictData> data) {
    Value v;
    v.kind_ = Kind::Dict;
    v.dict_ = std::move(data);
    return v;
}
Value Value::function(std::string name, NativeFunction call) {
    Value v;
    v.kind_ = Kind::Function;
    v.function_ = std::make_shared<FunctionData>(FunctionData{std::move(name), std::move(call)});
    return v;
}
Value Value::loop(std::shared_ptr<LoopData> data) {
    Value v;
    v.kind_ = Kind::Loop;
    v.loop_ = std::move(data);
    return v;
}

Value Value::namespace_object(std::shared_ptr<DictData> attributes) {
    Value v;
    v.kind_ = Kind::Namespace;
    v.dict_ = std::move(attributes);
    return v;
}

Value Value::from_json(const nlohmann::ordered_json& json, int depth) {
    if (depth > kMaxValueDepth) fail_limit("input nesting too deep");
    switch (json.type()) {
        case nlohmann::ordered_json::value_t::null: return none();
        case nlohmann::ordered_json::value_t::boolean: return Value(json.get<bool>());
        case nlohmann::ordered_json::value_t::number_integer: return Value(json.get<int64_t>());
        case nlohmann::ordered_json::value_t::number_unsigned: {
            const auto u = json.get<uint64_t>();
            if (u > static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<double>(u));
            return Value(static_cast<int64_t>(u));
        }
        case nlohmann::ordered_json::value_t::number_float: return Value(json.get<double>());
        case nlohmann::ordered_json::value_t::string: return Value(json.get<std::string>());
        case nlohmann::ordered_json::value_t::array: {
            std::vector<Value> items;
            items.reserve(json.size());
            for (const auto& item : json) items.push_back(from_json(item, depth + 1));
            return list(std::move(items));
        }
        case nlohmann::ordered_json::value_t::object: {
            auto data = std::make_shared<DictData>();
            for (const auto& [key, item] : json.items()) data->set(Value(key), from_json(item, depth + 1));
            return dict(std::move(data));
        }
        default: return none();  // binary / discarded: not produced by JSON parsing
    }
}

bool Value::truthy() const {
    switch (kind_) {
        case Kind::Undefined:
        case Kind::None: return false;
        case Kind::Bool: return bool_;
        case Kind::Int: return int_ != 0;
        case Kind::Float: return float_ != 0.0;
        case Kind::String: return !as_string().empty();
        case Kind::List: return !list_->items.empty();
        case Kind::Dict: return dict_->size() != 0;
        case Kind::Function:
        case Kind::Namespace:
        case Kind::Loop:
        case Kind::Iterator: return true;
    }
    return false;
}

size_t Value::approx_bytes() const {
    switch (kind_) {
        case Kind::String: return 16 + as_string().size();
        case Kind::List:
        case Kind::Iterator: return list_->bytes;
        case Kind::Dict: return 16 + dict_->bytes();
        default: return 16;
    }
}

int Value::depth() const {
    if (kind_ == Kind::List || kind_ == Kind::Iterator) return list_->depth;
    if (kind_ == Kind::Dict) return dict_->depth();
    return 0;
}

std::string Value::type_name() const {
    switch (kind_) {
        case Kind::Undefined: return "Undefined";
        case Kind::None: return "NoneType";
        case Kind::Bool: return "bool";
        case Kind::Int: return "int";
        case Kind::Float: return "float";
        case Kind::String: return "str";
        case Kind::List: return list_->is_tuple ? "tuple" : "list";
        case Kind::Dict: return "dict";
        case Kind::Function: return "function";
        case Kind::Namespace: return "Namespace";
        case Kind::Loop: return "LoopContext";
        case Kind::Iterator: return "generator";
    }
    return "object";
}

// ---- CallArgs --------------------------------------------------------------------------------------

const Value* CallArgs::get(size_t index, std::string_view name) const {
    for (const auto& [key, value] : keyword) {
        if (key == name) return &value;
    }
    if (index < positional.size()) return &positional[index];
    return nullptr;
}

Value CallArgs::get_or(size_t index, std::string_view name, Value fallback) const {
    const Value* v = get(index, name);
    return v ? *v : std::move(fallback);
}

// ---- UTF-8 -----------------------------------------------------------------------------------------

size_t utf8_sequence_length(unsigned char lead) {
    if (lead < 0x80) return 1;
    if ((lead >> 5) == 0x6) return 2;
    if ((lead >> 4) == 0xE) return 3;
    if ((lead >> 3) == 0x1E) return 4;
    return 1;  // invalid byte: treat as one unit
}

std::vector<std::string> utf8_chars(std::string_view s) {
    charge_character_split(s.size());
    std::vector<std::string> out;
    for (size_t i = 0; i < s.size();) {
        size_t n = std::min(utf8_sequence_length(static_cast<unsigned char>(s[i])), s.size() - i);
        out.emplace_back(s.substr(i, n));
        i += n;
    }
    return out;
}

std::string utf8_char_at(std::string_view s, size_t index) {
    for (size_t i = 0; i < s.size();) {
        const size_t n = std::min(utf8_sequence_length(static_cast<unsigned char>(s[i])), s.size() - i);
        if (index-- == 0) return std::string(s.substr(i, n));
        i += n;
    }
    return {};
}

// Steps as utf8_chars and utf8_char_at do, so that the three agree on invalid UTF-8 too (counting lead
// bytes instead let an index run past utf8_chars' last character: found by fuzz/jinja_fuzzer).
size_t utf8_length(std::string_view s) {
    size_t count = 0;
    for (size_t i = 0; i < s.size(); ++count)
        i += std::min(utf8_sequence_length(static_cast<unsigned char>(s[i])), s.size() - i);
    return count;
}

static uint32_t decode_code_point(std::string_view ch) {
    const auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(ch[i])); };
    switch (ch.size()) {
        case 2: return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
        case 3: return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
        case 4: return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
        default: return b(0);
    }
}

// Python's str.isprintable() for one non-ASCII code point (approximate: separators, format and
// control characters, private use; unassigned code points are not tracked).
static bool is_printable_non_ascii(uint32_t cp) {
    if (cp < 0xA0) return false;  // C1 controls
    if (cp == 0xA0 || cp == 0xAD || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200F)) return false;
    if ((cp >= 0x2028 && cp <= 0x202F) || (cp >= 0x205F && cp <= 0x206F)) return false;
    if (cp == 0x3000 || cp == 0xFEFF || (cp >= 0xFFF9 && cp <= 0xFFFB)) return false;
    if ((cp >= 0x0600 && cp <= 0x0605) || cp == 0x061C || cp == 0x06DD || cp == 0x070F) return false;
    if ((cp >= 0xE000 && cp <= 0xF8FF) || cp >= 0xF0000) return false;
    if (cp >= 0xD800 && cp <= 0xDFFF) return false;
    return true;
}

// ---- printing --------------------------------------------------------------------------------------

std::string float_repr(double value) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
    if (value == 0.0) return std::signbit(value) ? "-0.0" : "0.0";
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
    (void)ec;
    std::string sci(buf, end);  // "-d.ddde+XX"
    bool negative = sci[0] == '-';
    if (negative) sci.erase(0, 1);
    size_t e_pos = sci.find('e');
    std::string digits = sci.substr(0, e_pos);
    digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
    int exponent = std::stoi(sci.substr(e_pos + 1));
    std::string out = negative ? "-" : "";
    if (exponent < -4 || exponent >= 16) {
        out += digits.substr(0, 1);
        if (digits.size() > 1) out += "." + digits.substr(1);
        char exp_buf[16];
        std::snprintf(exp_buf, sizeof exp_buf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
        return out + exp_buf;
    }
    if (exponent < 0) {
        return out + "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    }
    const auto int_len = static_cast<size_t>(exponent + 1);
    if (digits.size() <= int_len) {
        return out + digits + std::string(int_len - digits.size(), '0') + ".0";
    }
    return out + digits.substr(0, int_len) + "." + digits.substr(int_len);
}

static std::string string_repr(const std::string& s) {
    const bool has_single = s.find('\'') != std::string::npos;
    const bool has_double = s.find('"') != std::string::npos;
    const char quote = has_single && !has_double ? '"' : '\'';
    std::string out(1, quote);
    for (const std::string& ch : utf8_chars(s)) {
        const auto c = static_cast<unsigned char>(ch[0]);
        if (ch.size() == 1) {
            if (c == static_cast<unsigned char>(quote) || c == '\\') {
                out += '\\';
                out += static_cast<char>(c);
            } else if (c == '\n') {
                out += "\\n";
            } else if (c == '\r') {
                out += "\\r";
            } else if (c == '\t') {
                out += "\\t";
            } else if (c < 0x20 || c >= 0x7F) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\x%02x", c);
                out += buf;
            } else {
                out += static_cast<char>(c);
            }
            continue;
        }
        const uint32_t cp = decode_code_point(ch);
        if (is_printable_non_ascii(cp)) {
            out += ch;
        } else {
            char buf[16];
            if (cp <= 0xFF)
                std::snprintf(buf, sizeof buf, "\\x%02x", cp);
            else if (cp <= 0xFFFF)
                std::snprintf(buf, sizeof buf, "\\u%04x", cp);
            else
                std::snprintf(buf, sizeof buf, "\\U%08x", cp);
            out += buf;
        }
    }
    out += quote;
    return out;
}

std::string to_repr(const Value& value) {
    switch (value.kind()) {
        case Kind::String: return string_repr(value.as_string());
        case Kind::List: {
            const bool tuple = value.is_tuple();
            std::string out = tuple ? "(" : "[";
            const auto& items = value.items();
            for (size_t i = 0; i < items.size(); ++i) {
                if (i) out += ", ";
                out += to_repr(items[i]);
            }
            if (tuple && items.size() == 1) out += ",";
            out += tuple ? ")" : "]";
            return out;
        }
        case Kind::Dict: {
            std::string out = "{";
            bool first = true;
            for (const auto& [k, v] : value.dict_data().entries()) {
                if (!first) out += ", ";
                first = false;
                out += to_repr(k) + ": " + to_repr(v);
            }
            return out + "}";
        }
        default: return to_str(value);
    }
}

std::string to_str(const Value& value) {
    switch (value.kind()) {
        case Kind::Undefined: return "";
        case Kind::None: return "None";
        case Kind::Bool: return value.as_bool() ? "True" : "False";
        case Kind::Int: return std::to_string(value.as_int());
        case Kind::Float: return float_repr(value.as_double());
        case Kind::String: return value.as_string();
        case Kind::List:
        case Kind::Dict: return to_repr(value);
        case Kind::Function: return "<function " + value.function_data().name + ">";
        case Kind::Namespace: return "<Namespace>";  // its attributes may refer back to it
        case Kind::Iterator: return "<generator object>";
        case Kind::Loop:
            return "<LoopContext " + std::to_string(value.loop_data().index + 1) + "/" +
                   std::to_string(value.loop_data().items->size()) + ">";
    }
    return "";
}

// ---- json.dumps ------------------------------------------------------------------------------------

static void json_string(const std::string& s, std::string& out, bool ensure_ascii) {
    out += '"';
    for (size_t i = 0; i < s.size(); ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (ensure_ascii && c >= 0x7F) {
            const size_t n = std::min(utf8_sequence_length(c), s.size() - i);
            uint32_t cp = decode_code_point(std::string_view(s).substr(i, n));
            i += n - 1;
            char buf[16];
            if (cp >= 0x10000) {
                cp -= 0x10000;
                std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
            } else {
                std::snprintf(buf, sizeof buf, "\\u%04x", cp);
            }
            out += buf;
            continue;
        }
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
    out += '"';
}

static std::string json_float(double f) {
    if (std::isnan(f)) return "NaN";
    if (std::isinf(f)) return f < 0 ? "-Infinity" : "Infinity";
    return float_repr(f);
}

static void json_dump(const Value& value, const JsonDumpOptions& options, int level, std::string& out) {
    const auto newline = [&](int depth) {
        if (out.size() + options.indent.size() * static_cast<size_t>(depth) > options.max_bytes) {
            fail_output_size(options.max_bytes);
        }
        out += '\n';
        for (int i = 0; i < depth; ++i) out += options.indent;
    };
    switch (value.kind()) {
        case Kind::None: out += "null"; return;
        case Kind::Bool: out += value.as_bool() ? "true" : "false"; return;
        case Kind::Int: out += std::to_string(value.as_int()); return;
        case Kind::Float: out += json_float(value.as_double()); return;
        case Kind::String: json_string(value.as_string(), out, options.ensure_ascii); return;
        case Kind::List: {
            const auto& items = value.items();
            if (items.empty()) {
                out += "[]";
                return;
            }
            out += '[';
            for (size_t i = 0; i < items.size(); ++i) {
                if (i) out += options.item_separator;
                if (options.has_indent) newline(level + 1);
                json_dump(items[i], options, level + 1, out);
            }
            if (options.has_indent) newline(level);
            out += ']';
            return;
        }
        case Kind::Dict: {
            auto entries = value.dict_data().entries();
            if (entries.empty()) {
                out += "{}";
                return;
            }
            if (options.sort_keys) {
                std::stable_sort(entries.begin(), entries.end(),
                                 [](const auto& a, const auto& b) { return compare_values(a.first, b.first) < 0; });
            }
            out += '{';
            bool first = true;
            for (const auto& [k, v] : entries) {
                if (!first) out += options.item_separator;
                first = false;
                if (options.has_indent) newline(level + 1);
                switch (k.kind()) {
                    case Kind::String: json_string(k.as_string(), out, options.ensure_ascii); break;
                    case Kind::None: out += "\"null\""; break;
                    case Kind::Bool: out += k.as_bool() ? "\"true\"" : "\"false\""; break;
                    case Kind::Int: out += "\"" + std::to_string(k.as_int()) + "\""; break;
                    case Kind::Float: out += "\"" + json_float(k.as_double()) + "\""; break;
                    default: fail("keys must be str, int, float, bool or None, not " + k.type_name());
                }
                out += options.key_separator;
                json_dump(v, options, level + 1, out);
            }
            if (options.has_indent) newline(level);
            out += '}';
            return;
        }
        default: fail("Object of type " + value.type_name() + " is not JSON serializable");
    }
}

std::string json_dumps(const Value& value, const JsonDumpOptions& options) {
    std::string out;
    json_dump(value, options, 0, out);
    return out;
}

// ---- comparison ------------------------------------------------------------------------------------

bool values_equal(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
        return a.as_int() == b.as_int();
    }
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case Kind::Undefined:
        case Kind::None: return true;
        case Kind::String: return a.as_string() == b.as_string();
        case Kind::List: {
            if (a.is_tuple() != b.is_tuple() || a.items().size() != b.items().size()) return false;
            for (size_t i = 0; i < a.items().size(); ++i) {
                if (!values_equal(a.items()[i], b.items()[i])) return false;
            }
            return true;
        }
        case Kind::Dict: {
            if (a.dict_data().size() != b.dict_data().size()) return false;
            for (const auto& [k, v] : a.dict_data().entries()) {
                const Value* other = b.dict_data().find(k);
                if (!other || !values_equal(v, *other)) return false;
            }
            return true;
        }
        case Kind::Function: return &a.function_data() == &b.function_data();
        case Kind::Iterator: return &a.iterator_state() == &b.iterator_state();
        case Kind::Namespace: return &a.dict_data() == &b.dict_data();
        default: return false;
    }
}

int compare_values(const Value& a, const Value& b, const char* op) {
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) {
            const double x = a.as_double(), y = b.as_double();
            return x < y ? -1 : (x > y ? 1 : 0);
        }
        const int64_t x = a.as_int(), y = b.as_int();
        return x < y ? -1 : (x > y ? 1 : 0);
    }
    if (a.is_string() && b.is_string()) {
        const int c = a.as_string().compare(b.as_string());
        return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
        const auto& x = a.items();
        const auto& y = b.items();
        for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
            if (values_equal(x[i], y[i])) continue;
            return compare_values(x[i], y[i], op);
        }
        return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
    }
    if (a.is_undefined() || b.is_undefined()) {
        fail(std::string(a.is_undefined() ? a.undefined_hint() : b.undefined_hint()).empty()
                 ? "undefined value in comparison"
                 : (a.is_undefined() ? a.undefined_hint() : b.undefined_hint()));
    }
    fail(std::string("'") + op + "' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() +
         "'");
}

}  // namespace tempered::jinja
