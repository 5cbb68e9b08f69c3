#include "grammar/object_keys.h"

#include <map>
#include <memory>
#include <string_view>

#include <nlohmann/json.hpp>

#include "grammar/regex.h"

namespace tempered::grammar {
namespace {

// The declared names' spellings as a byte trie.
struct TrieNode {
    std::map<uint8_t, std::unique_ptr<TrieNode>> children;
    bool name_ends = false;
};

// Where a byte position falls inside one canonically spelled character.
struct CharState {
    enum class Kind { kBoundary, kUtf8, kAfterBackslash, kInUnicodeEscape } kind = Kind::kBoundary;
    uint8_t lead = 0;      // kUtf8: the lead byte
    size_t remaining = 0;  // kUtf8: continuation bytes still to come; kInUnicodeEscape: hex digits left
    size_t written = 0;    // kUtf8: continuation bytes written
};

CharState advance(CharState state, uint8_t byte) {
    using Kind = CharState::Kind;
    switch (state.kind) {
        case Kind::kBoundary:
            if (byte == '\\') return {Kind::kAfterBackslash};
            if (byte < 0x80) return {};
            return {Kind::kUtf8, byte, size_t(byte >= 0xF0 ? 3 : byte >= 0xE0 ? 2 : 1), 0};
        case Kind::kUtf8:
            if (state.remaining == 1) return {};
            return {Kind::kUtf8, state.lead, state.remaining - 1, state.written + 1};
        case Kind::kAfterBackslash:
            if (byte == 'u') return {Kind::kInUnicodeEscape, 0, 4, 0};
            return {};
        case Kind::kInUnicodeEscape:
            if (state.remaining == 1) return {};
            return {Kind::kInUnicodeEscape, 0, state.remaining - 1, 0};
    }
    return {};
}

Expr bytes(uint8_t first, uint8_t last) { return Expr::byte_set(ByteSet::range(first, last)); }

// The bytes a well-formed UTF-8 character with this lead may have as its first continuation byte.
ByteSet first_continuation(uint8_t lead) {
    if (lead == 0xE0) return ByteSet::range(0xA0, 0xBF);
    if (lead == 0xED) return ByteSet::range(0x80, 0x9F);
    if (lead == 0xF0) return ByteSet::range(0x90, 0xBF);
    if (lead == 0xF4) return ByteSet::range(0x80, 0x8F);
    return ByteSet::range(0x80, 0xBF);
}

ByteSet without(ByteSet set, const TrieNode& node) {
    for (const auto& [byte, child] : node.children) set.bits[byte >> 6] &= ~(uint64_t{1} << (byte & 63));
    return set;
}

// \u00xx for the control characters json.dumps spells that way (not \b \t \n \f \r).
Expr canonical_unicode_escape_tail() {
    ByteSet low = ByteSet::range('0', '7');
    for (char c : std::string_view("bef")) low.add(static_cast<uint8_t>(c));
    ByteSet hex = ByteSet::range('0', '9');
    hex.add_range('a', 'f');
    return Expr::choice({Expr::sequence({Expr::literal("u000"), Expr::byte_set(low)}),
                         Expr::sequence({Expr::literal("u001"), Expr::byte_set(hex)})});
}

// Characters that start at a boundary and are not a child: a key that writes one has left every name.
std::vector<Expr> leaving_at_boundary(const TrieNode& node) {
    std::vector<Expr> options;
    ByteSet plain = ByteSet::range(0x20, 0x7F);
    plain.bits[0] &= ~(uint64_t{1} << '"');
    plain.bits[1] &= ~(uint64_t{1} << ('\\' - 64));
    if (ByteSet free = without(plain, node); !free.empty()) options.push_back(Expr::byte_set(free));
    // UTF-8 leads grouped by the shape of the rest of the character (RFC 3629 table).
    struct Shape {
        uint8_t first, last;
        size_t continuations;
    };
    for (const Shape shape : {Shape{0xC2, 0xDF, 1}, Shape{0xE0, 0xE0, 2}, Shape{0xE1, 0xEC, 2}, Shape{0xED, 0xED, 2},
                              Shape{0xEE, 0xEF, 2}, Shape{0xF0, 0xF0, 3}, Shape{0xF1, 0xF3, 3}, Shape{0xF4, 0xF4, 3}}) {
        const ByteSet leads = without(ByteSet::range(shape.first, shape.last), node);
        if (leads.empty()) continue;
        std::vector<Expr> parts{Expr::byte_set(leads), Expr::byte_set(first_continuation(shape.first))};
        for (size_t i = 1; i < shape.continuations; ++i) parts.push_back(bytes(0x80, 0xBF));
        options.push_back(Expr::sequence(std::move(parts)));
    }
    if (!node.children.count('\\')) {
        ByteSet short_escapes;
        for (char c : std::string_view("\"\\bfnrt")) short_escapes.add(static_cast<uint8_t>(c));
        options.push_back(Expr::sequence(
            {Expr::literal("\\"), Expr::choice({Expr::byte_set(short_escapes), canonical_unicode_escape_tail()})}));
    }
    return options;
}

// Bytes that are not a child at a position inside a character, each followed by the rest of its character.
std::vector<Expr> leaving_inside_char(const TrieNode& node, const CharState& state) {
    std::vector<Expr> options;
    if (state.kind == CharState::Kind::kUtf8) {
        ByteSet next = state.written == 0 ? first_continuation(state.lead) : ByteSet::range(0x80, 0xBF);
        if (ByteSet free = without(next, node); !free.empty()) {
            std::vector<Expr> parts{Expr::byte_set(free)};
            for (size_t i = 1; i < state.remaining; ++i) parts.push_back(bytes(0x80, 0xBF));
            options.push_back(Expr::sequence(std::move(parts)));
        }
    } else if (state.kind == CharState::Kind::kAfterBackslash) {
        ByteSet short_escapes;
        for (char c : std::string_view("\"\\bfnrt")) short_escapes.add(static_cast<uint8_t>(c));
        if (ByteSet free = without(short_escapes, node); !free.empty()) options.push_back(Expr::byte_set(free));
        if (!node.children.count('u')) options.push_back(canonical_unicode_escape_tail());
    }
    return options;  // inside \u00xx: only the declared spellings continue
}

Expr key_rest(const TrieNode& node, CharState state, RuleId free_string_rest) {
    std::vector<Expr> options;
    for (const auto& [byte, child] : node.children) {
        options.push_back(
            Expr::sequence({bytes(byte, byte), key_rest(*child, advance(state, byte), free_string_rest)}));
    }
    std::vector<Expr> leaving =
        state.kind == CharState::Kind::kBoundary ? leaving_at_boundary(node) : leaving_inside_char(node, state);
    if (!leaving.empty()) {
        options.push_back(Expr::sequence({Expr::choice(std::move(leaving)), Expr::reference(free_string_rest)}));
    }
    if (state.kind == CharState::Kind::kBoundary && !node.name_ends) options.push_back(Expr::literal("\""));
    return Expr::choice(std::move(options));
}

}  // namespace

Expr json_key_except(const std::vector<std::string>& names, RuleId free_string_rest) {
    TrieNode root;
    for (const std::string& name : names) {
        const std::string quoted = nlohmann::ordered_json(name).dump();
        TrieNode* node = &root;
        for (char c : std::string_view(quoted).substr(1, quoted.size() - 2)) {
            auto& child = node->children[static_cast<uint8_t>(c)];
            if (!child) child = std::make_unique<TrieNode>();
            node = child.get();
        }
        node->name_ends = true;
    }
    return Expr::sequence({Expr::literal("\""), key_rest(root, CharState{}, free_string_rest)});
}

}  // namespace tempered::grammar
