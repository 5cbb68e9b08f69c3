#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "grammar/gbnf.h"
#include "grammar/utf8_ranges.h"

namespace tempered::grammar {
namespace {

// Printable ASCII but the characters with a meaning in a literal or a class.
bool is_plain(uint32_t code_point) {
    if (code_point < 0x20 || code_point > 0x7E) return false;
    for (const char special : {'"', '\\', '[', ']', '-', '^'})
        if (code_point == static_cast<uint32_t>(special)) return false;
    return true;
}

// One character as GBNF writes it inside a literal or a class: escaped unless plain, always with a fixed number
// of hex digits.
std::string written_char(uint32_t code_point) {
    if (is_plain(code_point)) return std::string(1, static_cast<char>(code_point));
    char buffer[16];
    // \u and \U, never \x: xgrammar (vLLM's, SGLang's) reads \x greedily ("\x22c" would be U+022C).
    if (code_point < 0x10000) {
        std::snprintf(buffer, sizeof buffer, "\\u%04X", code_point);
    } else {
        std::snprintf(buffer, sizeof buffer, "\\U%08X", code_point);
    }
    return buffer;
}

std::string written_class(const std::vector<CodePointRange>& ranges) {
    std::string out = "[";
    for (const CodePointRange& range : ranges) {
        out += written_char(range.first);
        if (range.last != range.first) out += "-" + written_char(range.last);
    }
    return out + "]";
}

std::vector<CodePointRange> ascii_ranges(const ByteSet& set) {
    std::vector<CodePointRange> ranges;
    for (uint32_t byte = 0; byte < 0x80; ++byte)
        if (set.contains(static_cast<uint8_t>(byte))) ranges.push_back({byte, byte});
    return normalized(std::move(ranges));
}

uint8_t first_byte_of(const ByteSet& set) {
    for (unsigned byte = 0; byte < 256; ++byte)
        if (set.contains(static_cast<uint8_t>(byte))) return static_cast<uint8_t>(byte);
    return 0;
}

std::string rule_name(const Grammar& grammar, uint32_t rule) {
    return rule == grammar.root ? "root" : "r" + std::to_string(rule);
}

// One alternative as a GBNF sequence: runs of single characters as one literal, other sets as classes.
Result<std::string> written_alternative(const Grammar& grammar, uint32_t rule, uint32_t start) {
    std::vector<std::string> items;
    std::string literal;
    auto close_literal = [&] {
        if (!literal.empty()) items.push_back("\"" + literal + "\"");
        literal.clear();
    };
    for (uint32_t at = start; grammar.elements[at].kind != Element::Kind::kEnd; ++at) {
        const Element& element = grammar.elements[at];
        if (element.kind == Element::Kind::kRule) {
            close_literal();
            items.push_back(rule_name(grammar, element.index));
            continue;
        }
        const ByteSet& set = grammar.byte_sets[element.index];
        std::vector<CodePointRange> ranges;
        if (set.bits[2] == 0 && set.bits[3] == 0) {
            ranges = ascii_ranges(set);
        } else {
            // A lead byte set: the character's length is its first lead's, and that many minus one
            // continuation sets must follow in this alternative.
            std::vector<ByteSet> continuations;
            const int length = utf8_length_of_lead(first_byte_of(set));
            for (uint32_t next = at + 1; length > 1 && continuations.size() + 1 < static_cast<size_t>(length); ++next) {
                const Element& follower = grammar.elements[next];
                if (follower.kind != Element::Kind::kBytes) break;
                continuations.push_back(grammar.byte_sets[follower.index]);
            }
            std::optional<std::vector<CodePointRange>> characters = code_points_of(set, continuations);
            if (!characters || characters->empty())
                return Error{"rule " + std::to_string(rule) +
                             " spells a byte set that is not a whole UTF-8 character; it has no GBNF form"};
            at += static_cast<uint32_t>(continuations.size());
            ranges = std::move(*characters);
        }
        if (ranges.empty()) return Error{"rule " + std::to_string(rule) + " holds an empty byte set"};
        if (ranges.size() == 1 && ranges[0].first == ranges[0].last) {
            literal += written_char(ranges[0].first);
        } else {
            close_literal();
            items.push_back(written_class(ranges));
        }
    }
    close_literal();
    if (items.empty()) return std::string("\"\"");
    std::string out;
    for (const std::string& item : items) out += (out.empty() ? "" : " ") + item;
    return out;
}

}  // namespace

Result<std::string> write_gbnf(const Grammar& grammar) {
    std::string out;
    for (uint32_t rule = 0; rule < grammar.rule_alternatives.size(); ++rule) {
        const auto& alternatives = grammar.rule_alternatives[rule];
        if (alternatives.empty()) return Error{"rule " + std::to_string(rule) + " has no alternatives"};
        out += rule_name(grammar, rule) + " ::=";
        for (size_t i = 0; i < alternatives.size(); ++i) {
            auto written = written_alternative(grammar, rule, alternatives[i]);
            if (!written) return written.error();
            out += (i == 0 ? " " : " | ") + *written;
        }
        out += "\n";
    }
    return out;
}

}  // namespace tempered::grammar
