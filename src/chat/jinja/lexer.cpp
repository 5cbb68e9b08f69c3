#include "chat/jinja/lexer.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "chat/jinja/value.h"

namespace tempered::jinja {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Python normalizes "\r\n" and "\r" to "\n" and drops one trailing newline.
std::string normalize_source(std::string_view source) {
    std::string out;
    out.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
        if (source[i] == '\r') {
            out += '\n';
            if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
        } else {
            out += source[i];
        }
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

void append_utf8(uint32_t cp, std::string& out) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

// Python string-literal escapes (jinja2 decodes string tokens with "unicode-escape").
std::string unescape(std::string_view raw, int line) {
    std::string out;
    for (size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] != '\\' || i + 1 >= raw.size()) {
            out += raw[i];
            continue;
        }
        const char e = raw[++i];
        const auto hex = [&](size_t count) -> uint32_t {
            uint32_t cp = 0;
            for (size_t k = 1; k <= count; ++k) {
                if (i + k >= raw.size() || !std::isxdigit(static_cast<unsigned char>(raw[i + k]))) {
                    fail("truncated \\x, \\u or \\U escape in string literal", line);
                }
                const char h = static_cast<char>(std::tolower(static_cast<unsigned char>(raw[i + k])));
                cp = cp * 16 + static_cast<uint32_t>(h <= '9' ? h - '0' : h - 'a' + 10);
            }
            i += count;
            return cp;
        };
        switch (e) {
            case '\n': break;
            case '\\': out += '\\'; break;
            case '\'': out += '\''; break;
            case '"': out += '"'; break;
            case 'a': out += '\a'; break;
            case 'b': out += '\b'; break;
            case 'f': out += '\f'; break;
            case 'n': out += '\n'; break;
            case 'r': out += '\r'; break;
            case 't': out += '\t'; break;
            case 'v': out += '\v'; break;
            case 'x': append_utf8(hex(2), out); break;
            case 'u': append_utf8(hex(4), out); break;
            case 'U': {
                const uint32_t cp = hex(8);
                if (cp > 0x10FFFF) fail("illegal Unicode character in string literal", line);
                append_utf8(cp, out);
                break;
            }
            default:
                if (e >= '0' && e <= '7') {
                    uint32_t cp = static_cast<uint32_t>(e - '0');
                    for (int k = 0; k < 2 && i + 1 < raw.size() && raw[i + 1] >= '0' && raw[i + 1] <= '7'; ++k) {
                        cp = cp * 8 + static_cast<uint32_t>(raw[++i] - '0');
                    }
                    append_utf8(cp, out);
                } else {
                    out += '\\';
                    out += e;
                }
        }
    }
    return out;
}

class Lexer {
public:
    explicit Lexer(std::string_view source) : src_(normalize_source(source)) {}

    std::vector<Token> run() {
        while (pos_ < src_.size()) {
            const size_t tag = find_tag_start(pos_);
            if (tag == std::string::npos) {
                emit_text(src_.substr(pos_));
                pos_ = src_.size();
                break;
            }
            lex_tag(tag);
        }
        tokens_.push_back(Token{TokenType::End, "", line_});
        return std::move(tokens_);
    }

private:
    size_t find_tag_start(size_t from) const {
        for (size_t i = from; i + 1 < src_.size(); ++i) {
            if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
        }
        return std::string::npos;
    }

    void emit_text(std::string text) {
        if (!text.empty()) tokens_.push_back(Token{TokenType::Text, text, line_});
        count_lines(text);
    }
    void count_lines(std::string_view text) {
        for (char c : text) line_ += c == '\n';
    }

    // Consumes the tag closer's trailing whitespace rules and records whether a line now starts.
    void after_close(size_t close_end, char sign_before_close, bool block_like) {
        size_t p = close_end;
        if (sign_before_close == '-') {
            while (p < src_.size() && is_space(src_[p])) ++p;
        } else if (sign_before_close != '+' && block_like && p < src_.size() && src_[p] == '\n') {
            ++p;  // trim_blocks
        }
        const std::string_view consumed(src_.data() + close_end, p - close_end);
        count_lines(consumed);
        const char last = p > 0 ? src_[p - 1] : '\0';
        line_starting_ = last == '\n';
        pos_ = p;
    }

    // '-' strips all whitespace before a tag; otherwise lstrip_blocks removes the spaces and tabs
    // between the line start and a block or comment tag ('+' opts out).
    static void strip_before_tag(std::string& text, char sign, bool line_starting) {
        if (sign == '-') {
            while (!text.empty() && is_space(text.back())) text.pop_back();
            return;
        }
        if (sign == '+') return;
        const size_t newline = text.rfind('\n');
        const size_t line_pos = newline == std::string::npos ? 0 : newline + 1;
        if ((line_pos > 0 || line_starting) && line_pos < text.size()) {
            bool blank = true;
            for (size_t i = line_pos; i < text.size(); ++i) blank = blank && is_space(text[i]);
            if (blank) text.resize(line_pos);
        }
    }

    bool starts_raw(size_t after_sign, size_t& raw_body) const {
        size_t p = after_sign;
        while (p < src_.size() && is_space(src_[p])) ++p;
        if (src_.compare(p, 3, "raw") != 0) return false;
        p += 3;
        while (p < src_.size() && is_space(src_[p])) ++p;
        if (p < src_.size() && src_[p] == '-') {
            if (src_.compare(p, 3, "-%}") != 0) return false;
            p += 3;
            while (p < src_.size() && is_space(src_[p])) ++p;
        } else if (src_.compare(p, 2, "%}") == 0) {
            p += 2;
        } else {
            return false;
        }
        raw_body = p;
        return true;
    }

    void lex_raw(size_t body_start, int start_line) {
        for (size_t i = body_start; i + 1 < src_.size(); ++i) {
            if (src_[i] != '{' || src_[i + 1] != '%') continue;
            size_t p = i + 2;
            const char sign = p < src_.size() && (src_[p] == '-' || src_[p] == '+') ? src_[p] : '\0';
            if (sign) ++p;
            while (p < src_.size() && is_space(src_[p])) ++p;
            if (src_.compare(p, 6, "endraw") != 0) continue;
            p += 6;
            while (p < src_.size() && is_space(src_[p])) ++p;
            char close_sign = '\0';
            if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) close_sign = src_[p++];
            if (src_.compare(p, 2, "%}") != 0) continue;
            std::string body = src_.substr(body_start, i - body_start);
            const bool body_line_starting = body_start > 0 && src_[body_start - 1] == '\n';
            strip_before_tag(body, sign, body_line_starting);
            if (!body.empty()) tokens_.push_back(Token{TokenType::Text, body, line_});
            count_lines(std::string_view(src_.data() + body_start, i - body_start));
            after_close(p + 2, close_sign, true);
            return;
        }
        fail("Missing end of raw directive", start_line);
    }

    void lex_tag(size_t tag) {
        std::string text = src_.substr(pos_, tag - pos_);
        const char kind = src_[tag + 1];
        size_t p = tag + 2;
        const char sign = p < src_.size() && (src_[p] == '-' || src_[p] == '+') ? src_[p] : '\0';
        if (sign) ++p;
        if (kind != '{' || sign == '-') strip_before_tag(text, sign, line_starting_);
        // Line counting covers the original text including any stripped whitespace.
        const std::string_view original(src_.data() + pos_, tag - pos_);
        if (!text.empty()) tokens_.push_back(Token{TokenType::Text, text, line_});
        count_lines(original);
        line_starting_ = false;

        if (kind == '%') {
            size_t raw_body = 0;
            if (starts_raw(p, raw_body)) {
                const int start_line = line_;
                count_lines(std::string_view(src_.data() + p, raw_body - p));
                lex_raw(raw_body, start_line);
                return;
            }
        }
        if (kind == '#') {
            lex_comment(p);
            return;
        }
        tokens_.push_back(Token{kind == '{' ? TokenType::VarBegin : TokenType::BlockBegin, "", line_});
        lex_expression(p, kind == '%');
    }

    void lex_comment(size_t p) {
        const int start_line = line_;
        const size_t close = src_.find("#}", p);
        if (close == std::string::npos) fail("Missing end of comment tag", start_line);
        char sign = '\0';
        if (close > p && (src_[close - 1] == '-' || src_[close - 1] == '+')) sign = src_[close - 1];
        count_lines(std::string_view(src_.data() + p, close - p));
        after_close(close + 2, sign, true);
    }

    void lex_expression(size_t p, bool block) {
        const int start_line = line_;
        std::vector<char> balance;
        const char* close = block ? "%}" : "}}";
        while (true) {
            if (p >= src_.size())
                fail(block ? "unexpected end of template, expected '%}'" : "unexpected end of template, expected '}}'",
                     start_line);
            if (balance.empty()) {
                if ((src_[p] == '-' || (block && src_[p] == '+')) && src_.compare(p + 1, 2, close) == 0) {
                    tokens_.push_back(Token{block ? TokenType::BlockEnd : TokenType::VarEnd, "", line_});
                    after_close(p + 3, src_[p], block);
                    return;
                }
                if (src_.compare(p, 2, close) == 0) {
                    tokens_.push_back(Token{block ? TokenType::BlockEnd : TokenType::VarEnd, "", line_});
                    after_close(p + 2, '\0', block);
                    return;
                }
            }
            const char c = src_[p];
            if (is_space(c)) {
                line_ += c == '\n';
                ++p;
                continue;
            }
            if (is_digit(c)) {
                p = lex_number(p);
                continue;
            }
            if (is_name_start(c)) {
                size_t e = p;
                while (e < src_.size() && is_name_char(src_[e])) ++e;
                tokens_.push_back(Token{TokenType::Name, src_.substr(p, e - p), line_});
                p = e;
                continue;
            }
            if (c == '\'' || c == '"') {
                p = lex_string(p);
                continue;
            }
            p = lex_operator(p, balance);
        }
    }

    size_t lex_number(size_t p) {
        size_t e = p;
        const auto digits = [&](size_t at) {
            size_t q = at;
            while (q < src_.size() &&
                   (is_digit(src_[q]) || (src_[q] == '_' && q + 1 < src_.size() && is_digit(src_[q + 1]))))
                ++q;
            return q;
        };
        e = digits(p);
        bool is_float = false;
        if (e + 1 < src_.size() && src_[e] == '.' && is_digit(src_[e + 1])) {
            is_float = true;
            e = digits(e + 1);
        }
        if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
            size_t q = e + 1;
            if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) ++q;
            if (q < src_.size() && is_digit(src_[q])) {
                is_float = true;
                e = digits(q);
            }
        }
        std::string text;
        for (size_t i = p; i < e; ++i) {
            if (src_[i] != '_') text += src_[i];
        }
        Token token{is_float ? TokenType::Float : TokenType::Int, text, line_};
        if (is_float) {
            token.float_value = std::strtod(text.c_str(), nullptr);
        } else {
            errno = 0;
            token.int_value = std::strtoll(text.c_str(), nullptr, 10);
            if (errno == ERANGE) fail("integer literal too large", line_);
        }
        tokens_.push_back(token);
        return e;
    }

    size_t lex_string(size_t p) {
        const char quote = src_[p];
        size_t e = p + 1;
        while (e < src_.size() && src_[e] != quote) {
            if (src_[e] == '\\') ++e;
            ++e;
        }
        if (e >= src_.size()) fail("unexpected end of string", line_);
        const std::string_view raw(src_.data() + p + 1, e - p - 1);
        tokens_.push_back(Token{TokenType::String, unescape(raw, line_), line_});
        count_lines(raw);
        return e + 1;
    }

    size_t lex_operator(size_t p, std::vector<char>& balance) {
        static const char* const two_char[] = {"//", "**", "==", "!=", "<=", ">="};
        for (const char* op : two_char) {
            if (src_.compare(p, 2, op) == 0) {
                tokens_.push_back(Token{TokenType::Operator, op, line_});
                return p + 2;
            }
        }
        const char c = src_[p];
        static const std::string_view single = "+-*/%~<>=()[]{},.:|;";
        if (single.find(c) == std::string_view::npos) {
            fail(std::string("unexpected char '") + c + "'", line_);
        }
        if (c == '(' || c == '[' || c == '{') {
            balance.push_back(c == '(' ? ')' : (c == '[' ? ']' : '}'));
        } else if (c == ')' || c == ']' || c == '}') {
            if (balance.empty() || balance.back() != c) fail(std::string("unexpected '") + c + "'", line_);
            balance.pop_back();
        }
        tokens_.push_back(Token{TokenType::Operator, std::string(1, c), line_});
        return p + 1;
    }

    std::string src_;
    size_t pos_ = 0;
    int line_ = 1;
    bool line_starting_ = true;
    std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) { return Lexer(source).run(); }

}  // namespace tempered::jinja
