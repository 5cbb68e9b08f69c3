#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "grammar/gbnf.h"
#include "grammar/left_recursion.h"
#include "grammar/utf8_ranges.h"

namespace tempered::grammar {
namespace {

constexpr uint64_t kMaxUnrolledItems = 200000;  // what all repetitions together may copy out

bool is_word_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

std::string utf8_of(uint32_t code_point) {
    std::string out;
    if (code_point < 0x80) {
        out += static_cast<char>(code_point);
    } else if (code_point < 0x800) {
        out += static_cast<char>(0xC0 | (code_point >> 6));
        out += static_cast<char>(0x80 | (code_point & 0x3F));
    } else if (code_point < 0x10000) {
        out += static_cast<char>(0xE0 | (code_point >> 12));
        out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (code_point & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (code_point >> 18));
        out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (code_point & 0x3F));
    }
    return out;
}

// A recursive-descent reader over the text; the first error ends it (`failed`), every function then returns
// at once with an empty result.
class GbnfReader {
public:
    explicit GbnfReader(std::string_view text) : text_(text) {}

    Result<Grammar> read() {
        skip_space(/*newlines=*/true);
        while (!failed() && pos_ < text_.size()) {
            read_rule();
            skip_space(true);
        }
        if (failed()) return Error{*error_};
        auto root = names_.find("root");
        if (root == names_.end()) return Error{"the grammar has no 'root' rule"};
        for (const auto& [name, rule] : names_)
            if (!defined_[rule]) return Error{"rule '" + name + "' is used but never defined"};
        auto grammar = builder_.build(root->second);
        if (!grammar) return grammar.error();
        if (auto cycle = find_left_recursion(*grammar))
            return Error{"rule '" + name_of(*cycle) + "' can reach itself before any character (left recursion)"};
        return grammar;
    }

private:
    bool failed() const { return error_.has_value(); }
    bool at(char c) const { return pos_ < text_.size() && text_[pos_] == c; }
    void skip_expected(char c) {
        if (at(c)) ++pos_;
    }

    void fail(const std::string& what) {
        if (failed()) return;
        size_t line = 1 + static_cast<size_t>(std::count(text_.begin(), text_.begin() + pos_, '\n'));
        error_ = what + " (line " + std::to_string(line) + ")";
    }

    // Blanks and # comments; line ends only where a rule cannot end (inside parentheses, after | or ::=).
    void skip_space(bool newlines) {
        while (pos_ < text_.size()) {
            const char c = text_[pos_];
            if (c == '#') {
                while (pos_ < text_.size() && text_[pos_] != '\n' && text_[pos_] != '\r') ++pos_;
            } else if (c == ' ' || c == '\t' || (newlines && (c == '\n' || c == '\r'))) {
                ++pos_;
            } else {
                return;
            }
        }
    }

    std::string read_name() {
        const size_t start = pos_;
        while (pos_ < text_.size() && is_word_char(text_[pos_])) ++pos_;
        if (pos_ == start) fail("expected a rule name");
        return std::string(text_.substr(start, pos_ - start));
    }

    RuleId rule_named(const std::string& name) {
        auto [it, added] = names_.try_emplace(name, 0);
        if (added) {
            it->second = builder_.add_rule();
            defined_.push_back(false);
        }
        return it->second;
    }

    std::string name_of(RuleId rule) const {
        for (const auto& [name, id] : names_)
            if (id == rule) return name;
        return "(a group or repetition inside another rule)";
    }

    void read_rule() {
        const std::string name = read_name();
        skip_space(false);
        if (failed()) return;
        if (pos_ > text_.size() || text_.substr(pos_, 3) != "::=") return fail("expected '::=' after '" + name + "'");
        pos_ += 3;
        skip_space(true);
        Expr body = read_alternatives(/*nested=*/false);
        if (failed()) return;
        const RuleId rule = rule_named(name);
        if (defined_[rule]) return fail("rule '" + name + "' is defined twice");
        defined_[rule] = true;
        builder_.define(rule, std::move(body));
        if (pos_ < text_.size() && text_[pos_] != '\n' && text_[pos_] != '\r')
            fail(std::string("unexpected '") + text_[pos_] + "'");
    }

    Expr read_alternatives(bool nested) {
        std::vector<Expr> options{read_sequence(nested)};
        while (!failed() && at('|')) {
            ++pos_;
            skip_space(true);
            options.push_back(read_sequence(nested));
        }
        return Expr::choice(std::move(options));
    }

    Expr read_sequence(bool nested) {
        std::vector<Expr> items;
        int stacked = 0;  // repetition operators on the last item
        while (!failed() && pos_ < text_.size()) {
            const char c = text_[pos_];
            if (c == '\n' || c == '\r' || c == '|' || c == ')') break;
            if (c == '*' || c == '+' || c == '?' || c == '{') {
                if (items.empty()) return fail("a repetition with nothing before it"), Expr::empty();
                if (++stacked > kMaxGbnfStackedRepetitions)
                    return fail("repetitions stacked on one item"), Expr::empty();
                items.back() = read_repetition(std::move(items.back()));
            } else {
                items.push_back(read_item());
                stacked = 0;
            }
            skip_space(nested);
        }
        return Expr::sequence(std::move(items));
    }

    Expr read_item() {
        const char c = text_[pos_];
        if (c == '"') return read_literal();
        if (c == '[') return read_class();
        if (c == '.') {
            ++pos_;
            return utf8_expr({{0, kMaxCodePoint}});
        }
        if (c == '(') return read_group();
        if (c == '<') return fail("token references (<[id]>) name another vocabulary's ids; not taken"), Expr::empty();
        if (is_word_char(c)) return Expr::reference(rule_named(read_name()));
        return fail(std::string("unexpected '") + c + "'"), Expr::empty();
    }

    Expr read_group() {
        if (++depth_ > kMaxGbnfNesting) return fail("groups nested too deep"), Expr::empty();
        ++pos_;
        skip_space(true);
        Expr inside = read_alternatives(/*nested=*/true);
        if (!failed() && !at(')')) fail("expected ')'");
        skip_expected(')');
        --depth_;
        return inside;
    }

    Expr read_literal() {
        ++pos_;
        std::string bytes;
        while (!failed() && !at('"')) {
            if (pos_ >= text_.size()) return fail("a literal without its closing '\"'"), Expr::empty();
            bytes += utf8_of(read_char());
        }
        skip_expected('"');
        return Expr::literal(bytes);
    }

    Expr read_class() {
        ++pos_;
        const bool negated = at('^');
        if (negated) ++pos_;
        std::vector<CodePointRange> ranges;
        while (!failed() && !at(']')) {
            if (pos_ >= text_.size()) return fail("a class without its closing ']'"), Expr::empty();
            const uint32_t first = read_char();
            uint32_t last = first;
            if (at('-') && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
                ++pos_;
                last = read_char();
                if (last < first) fail("a class range that ends before it starts");
            }
            ranges.push_back({first, last});
        }
        skip_expected(']');
        return utf8_expr(negated ? complement(normalized(std::move(ranges))) : ranges);
    }

    uint32_t read_char() {
        if (pos_ >= text_.size()) return fail("unexpected end of the grammar"), 0;
        if (text_[pos_] != '\\') return read_utf8_char();
        if (pos_ + 1 >= text_.size()) return fail("an escape at the end of the grammar"), 0;
        const char kind = text_[pos_ + 1];
        pos_ += 2;
        switch (kind) {
            case 'x': return read_hex(2);
            case 'u': return read_hex(4);
            case 'U': return read_hex(8);
            case 't': return '\t';
            case 'r': return '\r';
            case 'n': return '\n';
            case '\\':
            case '"':
            case '[':
            case ']':
            case '-':
            case '^': return static_cast<uint8_t>(kind);
            default: return fail(std::string("unknown escape '\\") + kind + "'"), 0;
        }
    }

    uint32_t read_hex(int digits) {
        uint32_t value = 0;
        for (int i = 0; i < digits; ++i, ++pos_) {
            if (pos_ >= text_.size() || !std::isxdigit(static_cast<unsigned char>(text_[pos_])))
                return fail("expected " + std::to_string(digits) + " hex digits"), 0;
            const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(text_[pos_])));
            value = value * 16 + static_cast<uint32_t>(c <= '9' ? c - '0' : c - 'a' + 10);
        }
        if (value > kMaxCodePoint || (value >= 0xD800 && value <= 0xDFFF)) fail("an escape that names no character");
        return value;
    }

    uint32_t read_utf8_char() {
        const auto lead = static_cast<uint8_t>(text_[pos_]);
        const int length = utf8_length_of_lead(lead);
        if (length == 0 || pos_ + static_cast<size_t>(length) > text_.size())
            return fail("the grammar is not well-formed UTF-8"), 0;
        std::string bytes(text_.substr(pos_, static_cast<size_t>(length)));
        uint32_t value = length == 1 ? lead : lead & (0xFF >> (length + 1));
        for (int i = 1; i < length; ++i) {
            const auto byte = static_cast<uint8_t>(bytes[static_cast<size_t>(i)]);
            if ((byte & 0xC0) != 0x80) return fail("the grammar is not well-formed UTF-8"), 0;
            value = (value << 6) | (byte & 0x3F);
        }
        if (utf8_of(value) != bytes || (value >= 0xD800 && value <= 0xDFFF))
            return fail("the grammar is not well-formed UTF-8"), 0;
        pos_ += static_cast<size_t>(length);
        return value;
    }

    // * + ? {m} {m,} {m,n}
    Expr read_repetition(Expr item) {
        const char c = text_[pos_++];
        uint32_t min = c == '+' ? 1 : 0;
        uint32_t max = c == '?' ? 1 : Expr::kUnbounded;
        if (c == '{') {
            skip_space(false);
            min = read_count();
            max = min;
            skip_space(false);
            if (at(',')) {
                ++pos_;
                skip_space(false);
                max = at('}') ? Expr::kUnbounded : read_count();
                skip_space(false);
            }
            if (!failed() && !at('}')) fail("expected '}'");
            skip_expected('}');
            if (max < min) fail("a repetition whose maximum is below its minimum");
        }
        unrolled_ += max == Expr::kUnbounded ? min + 1 : max;
        if (unrolled_ > kMaxUnrolledItems) fail("repetitions that unroll to too many items");
        return Expr::repeat(std::move(item), min, max);
    }

    uint32_t read_count() {
        const size_t start = pos_;
        uint64_t value = 0;
        while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_])) &&
               value <= kMaxGbnfRepetition)
            value = value * 10 + static_cast<uint64_t>(text_[pos_++] - '0');
        if (pos_ == start) return fail("expected a repetition count"), 0;
        if (value > kMaxGbnfRepetition) return fail("a repetition count over " + std::to_string(kMaxGbnfRepetition)), 0;
        return static_cast<uint32_t>(value);
    }

    std::string_view text_;
    size_t pos_ = 0;
    int depth_ = 0;
    uint64_t unrolled_ = 0;
    std::optional<std::string> error_;
    std::map<std::string, RuleId> names_;
    std::vector<bool> defined_;  // by RuleId
    GrammarBuilder builder_;
};

}  // namespace

Result<Grammar> read_gbnf(std::string_view text) {
    if (text.size() > kMaxGbnfBytes)
        return Error{"the grammar is longer than " + std::to_string(kMaxGbnfBytes) + " bytes"};
    return GbnfReader(text).read();
}

}  // namespace tempered::grammar
