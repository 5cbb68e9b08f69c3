#include "grammar/regex.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <vector>

namespace tempered::grammar {
namespace {

// A class of characters: ASCII members as bytes, plus whether every non-ASCII character belongs.
struct CharClass {
    ByteSet ascii;
    bool non_ascii = false;
};

// Well-formed UTF-8 for U+0080..U+10FFFF (RFC 3629 table): no overlong forms, no surrogates.
Expr utf8_multibyte_char() {
    auto bytes = [](uint8_t first, uint8_t last) { return Expr::byte_set(ByteSet::range(first, last)); };
    const Expr tail = bytes(0x80, 0xBF);
    return Expr::choice({
        Expr::sequence({bytes(0xC2, 0xDF), tail}),
        Expr::sequence({bytes(0xE0, 0xE0), bytes(0xA0, 0xBF), tail}),
        Expr::sequence({bytes(0xE1, 0xEC), tail, tail}),
        Expr::sequence({bytes(0xED, 0xED), bytes(0x80, 0x9F), tail}),
        Expr::sequence({bytes(0xEE, 0xEF), tail, tail}),
        Expr::sequence({bytes(0xF0, 0xF0), bytes(0x90, 0xBF), tail, tail}),
        Expr::sequence({bytes(0xF1, 0xF3), tail, tail, tail}),
        Expr::sequence({bytes(0xF4, 0xF4), bytes(0x80, 0x8F), tail, tail}),
    });
}

// How an ASCII character is written inside a JSON string.
std::string json_escaped(uint8_t c) {
    switch (c) {
        case '"': return "\\\"";
        case '\\': return "\\\\";
        case '\b': return "\\b";
        case '\f': return "\\f";
        case '\n': return "\\n";
        case '\r': return "\\r";
        case '\t': return "\\t";
        default: break;
    }
    if (c < 0x20) {
        static constexpr char kHex[] = "0123456789abcdef";
        return std::string("\\u00") + kHex[c >> 4] + kHex[c & 15];
    }
    return std::string(1, static_cast<char>(c));
}

Expr class_expr(const CharClass& cls) {
    ByteSet plain;
    std::vector<Expr> options;
    for (unsigned c = 0; c < 128; ++c) {
        if (!cls.ascii.contains(static_cast<uint8_t>(c))) continue;
        std::string written = json_escaped(static_cast<uint8_t>(c));
        if (written.size() == 1) {
            plain.add(static_cast<uint8_t>(c));
        } else {
            options.push_back(Expr::literal(written));
        }
    }
    if (!plain.empty()) options.insert(options.begin(), Expr::byte_set(plain));
    if (cls.non_ascii) options.push_back(utf8_multibyte_char());
    return Expr::choice(std::move(options));
}

CharClass shorthand_class(char letter) {
    CharClass cls;
    switch (letter) {
        case 'd':
        case 'D': cls.ascii.add_range('0', '9'); break;
        case 'w':
        case 'W':
            cls.ascii.add_range('a', 'z');
            cls.ascii.add_range('A', 'Z');
            cls.ascii.add_range('0', '9');
            cls.ascii.add('_');
            break;
        default:  // s, S
            for (char c : std::string_view(" \t\n\r\f\v")) cls.ascii.add(static_cast<uint8_t>(c));
            break;
    }
    if (letter >= 'A' && letter <= 'Z') {
        for (auto& word : cls.ascii.bits) word = ~word;
        cls.ascii.bits[2] = cls.ascii.bits[3] = 0;  // only ASCII here
        cls.non_ascii = true;
    }
    return cls;
}

// What `.` and negated classes may produce (see the header): a subset of "any character but newline".
CharClass generable_any() {
    CharClass cls;
    cls.ascii.add_range(0x20, 0x7E);
    cls.ascii.add('\t');
    cls.non_ascii = true;
    return cls;
}

class PatternParser {
public:
    explicit PatternParser(std::string_view pattern) : text_(pattern) {}

    // Anchors bind to a top-level branch: `^a|b$` is "starts with a" or "ends with b".
    Result<Expr> parse() {
        std::vector<Expr> branches;
        do {
            const bool anchored_start = consume('^');
            Expr body = parse_concatenation();
            const bool anchored_end = consume('$');
            std::vector<Expr> parts;
            const Expr any = Expr::repeat(json_string_char(), 0, Expr::kUnbounded);
            if (!anchored_start) parts.push_back(any);
            parts.push_back(std::move(body));
            if (!anchored_end) parts.push_back(any);
            branches.push_back(Expr::sequence(std::move(parts)));
        } while (consume('|'));
        if (!error_.empty()) return Error{error_};
        if (pos_ < text_.size()) return Error{"pattern: unsupported syntax at offset " + std::to_string(pos_)};
        return Expr::choice(std::move(branches));
    }

private:
    bool at_end() const { return pos_ >= text_.size(); }
    char peek() const { return at_end() ? '\0' : text_[pos_]; }
    bool consume(char c) {
        if (at_end() || text_[pos_] != c) return false;
        ++pos_;
        return true;
    }
    void fail(std::string message) {
        if (error_.empty()) error_ = "pattern: " + message + " at offset " + std::to_string(pos_);
        pos_ = text_.size();
    }

    Expr parse_alternation() {
        std::vector<Expr> options{parse_concatenation()};
        while (consume('|')) options.push_back(parse_concatenation());
        return Expr::choice(std::move(options));
    }

    Expr parse_concatenation() {
        std::vector<Expr> items;
        while (!at_end() && peek() != '|' && peek() != ')') {
            if (peek() == '$' && (pos_ + 1 == text_.size() || text_[pos_ + 1] == '|') && depth_ == 0) break;
            items.push_back(parse_quantified());
        }
        return Expr::sequence(std::move(items));
    }

    Expr parse_quantified() {
        Expr atom = parse_atom();
        for (;;) {
            uint32_t min = 0, max = 0;
            if (consume('?')) {
                min = 0, max = 1;
            } else if (consume('*')) {
                min = 0, max = Expr::kUnbounded;
            } else if (consume('+')) {
                min = 1, max = Expr::kUnbounded;
            } else if (peek() == '{') {
                if (!parse_braces(min, max)) return atom;
            } else {
                return atom;
            }
            consume('?');  // lazy: same language
            atom = Expr::repeat(std::move(atom), min, max);
        }
    }

    bool parse_braces(uint32_t& min, uint32_t& max) {
        ++pos_;  // '{'
        std::optional<uint32_t> low = parse_number();
        if (!low) return fail("expected a count after '{'"), false;
        min = max = *low;
        if (consume(',')) max = peek() == '}' ? Expr::kUnbounded : parse_number().value_or(0);
        if (!consume('}') || max < min) return fail("malformed {m,n}"), false;
        return true;
    }

    std::optional<uint32_t> parse_number() {
        if (peek() < '0' || peek() > '9') return std::nullopt;
        uint64_t value = 0;
        while (peek() >= '0' && peek() <= '9') value = std::min<uint64_t>(value * 10 + (text_[pos_++] - '0'), 100000);
        if (value > 10000) return fail("repetition count above 10000"), std::nullopt;
        return static_cast<uint32_t>(value);
    }

    Expr parse_atom() {
        const char c = text_[pos_++];
        switch (c) {
            case '(': {
                if (consume('?') && !consume(':')) return fail("only (?: groups are supported"), Expr{};
                ++depth_;
                Expr inner = parse_alternation();
                --depth_;
                if (!consume(')')) fail("unclosed group");
                return inner;
            }
            case '[': return class_expr(parse_class());
            case '.': return class_expr(generable_any());
            case '\\': return parse_escape_atom();
            case '^':
            case '$':
            case ')':
            case '*':
            case '+':
            case '?':
            case '{': return fail(std::string("unsupported '") + c + "'"), Expr{};
            default: break;
        }
        const auto byte = static_cast<uint8_t>(c);
        if (byte < 0x80) return Expr::literal(json_escaped(byte));
        std::string character(1, c);  // a UTF-8 sequence: copy the continuation bytes too
        while (!at_end() && (static_cast<uint8_t>(peek()) & 0xC0) == 0x80) character += text_[pos_++];
        return Expr::literal(character);
    }

    Expr parse_escape_atom() {
        if (at_end()) return fail("trailing backslash"), Expr{};
        const char c = text_[pos_];
        if (std::string_view("dDwWsS").find(c) != std::string_view::npos) {
            ++pos_;
            return class_expr(shorthand_class(c));
        }
        std::optional<uint8_t> literal = parse_escaped_char();
        return literal ? Expr::literal(json_escaped(*literal)) : Expr{};
    }

    // After a backslash: one literal ASCII character (identity or control escape).
    std::optional<uint8_t> parse_escaped_char() {
        const char c = text_[pos_++];
        switch (c) {
            case 'n': return '\n';
            case 't': return '\t';
            case 'r': return '\r';
            case 'f': return '\f';
            case 'v': return '\v';
            default: break;
        }
        if (static_cast<uint8_t>(c) < 0x80 && !std::isalnum(static_cast<unsigned char>(c))) {
            return static_cast<uint8_t>(c);
        }
        fail(std::string("unsupported escape \\") + c);
        return std::nullopt;
    }

    CharClass parse_class() {
        CharClass cls;
        const bool negated = consume('^');
        bool first = true;
        while (!at_end() && (first || peek() != ']')) {
            first = false;
            if (peek() == '\\' && pos_ + 1 < text_.size() &&
                std::string_view("dDwWsS").find(text_[pos_ + 1]) != std::string_view::npos) {
                CharClass shorthand = shorthand_class(text_[pos_ + 1]);
                pos_ += 2;
                cls.ascii.add_all(shorthand.ascii);
                cls.non_ascii |= shorthand.non_ascii;
                continue;
            }
            std::optional<uint8_t> low = parse_class_char();
            if (!low) return cls;
            uint8_t high = *low;
            if (peek() == '-' && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
                ++pos_;
                std::optional<uint8_t> end = parse_class_char();
                if (!end || *end < *low) return fail("bad class range"), cls;
                high = *end;
            }
            cls.ascii.add_range(*low, high);
        }
        if (!consume(']')) fail("unclosed class");
        if (negated) {
            CharClass any = generable_any();
            for (size_t i = 0; i < 2; ++i) cls.ascii.bits[i] = any.ascii.bits[i] & ~cls.ascii.bits[i];
            cls.non_ascii = !cls.non_ascii;
        }
        return cls;
    }

    std::optional<uint8_t> parse_class_char() {
        const char c = text_[pos_++];
        if (c == '\\') {
            if (at_end()) return fail("trailing backslash"), std::nullopt;
            return parse_escaped_char();
        }
        if (static_cast<uint8_t>(c) >= 0x80) return fail("non-ASCII characters in a class"), std::nullopt;
        return static_cast<uint8_t>(c);
    }

    std::string_view text_;
    size_t pos_ = 0;
    int depth_ = 0;  // open groups
    std::string error_;
};

}  // namespace

Expr json_string_char() {
    ByteSet plain = ByteSet::range(0x20, 0x7F);
    plain.bits[0] &= ~(uint64_t{1} << '"');
    plain.bits[1] &= ~(uint64_t{1} << ('\\' - 64));
    ByteSet short_escapes;
    for (char c : std::string_view("\"\\/bfnrt")) short_escapes.add(static_cast<uint8_t>(c));
    ByteSet hex = ByteSet::range('0', '9');
    hex.add_range('a', 'f');
    hex.add_range('A', 'F');
    const Expr hex_digit = Expr::byte_set(hex);
    // No surrogate escapes (\uD800-\uDFFF): a pair would be one character to a validator but two to
    // minLength/maxLength here, and a lone one is not a character at all.
    ByteSet hex_not_d = hex;
    hex_not_d.bits[1] &= ~((uint64_t{1} << ('D' - 64)) | (uint64_t{1} << ('d' - 64)));
    ByteSet surrogate_free_d = ByteSet::single('D');
    surrogate_free_d.add('d');
    Expr code_unit = Expr::choice({
        Expr::sequence({Expr::byte_set(hex_not_d), hex_digit, hex_digit, hex_digit}),
        Expr::sequence(
            {Expr::byte_set(surrogate_free_d), Expr::byte_set(ByteSet::range('0', '7')), hex_digit, hex_digit}),
    });
    Expr escape = Expr::sequence({
        Expr::literal("\\"),
        Expr::choice({Expr::byte_set(short_escapes), Expr::sequence({Expr::literal("u"), std::move(code_unit)})}),
    });
    return Expr::choice({Expr::byte_set(plain), std::move(escape), utf8_multibyte_char()});
}

Result<Expr> compile_pattern(std::string_view pattern) { return PatternParser(pattern).parse(); }

}  // namespace tempered::grammar
