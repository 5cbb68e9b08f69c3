// The grammar IR: rules whose bodies are alternatives of sequences over byte sets and rule references.
//
// A rule body is written as an `Expr` tree (literals, byte sets, sequences, choices, bounded or unbounded
// repetition, references to other rules) and lowered once by `GrammarBuilder::build` into a flat `Grammar`:
// every rule is a list of alternatives, every alternative a run of `Element`s ended by `kEnd`. Choices
// nested inside a sequence and repetitions become anonymous rules, so the matcher only ever sees two kinds
// of step: "match one byte of this set" and "enter this rule". Recursion is allowed, except left recursion
// (a rule reachable from itself without consuming a byte), which the JSON-Schema compiler never produces.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace tempered::grammar {

// A set of byte values, one bit each.
struct ByteSet {
    std::array<uint64_t, 4> bits{};

    static ByteSet single(uint8_t byte);
    static ByteSet range(uint8_t first, uint8_t last);
    void add(uint8_t byte) { bits[byte >> 6] |= uint64_t{1} << (byte & 63); }
    void add_range(uint8_t first, uint8_t last);
    void add_all(const ByteSet& other);
    bool contains(uint8_t byte) const { return (bits[byte >> 6] >> (byte & 63)) & 1; }
    bool empty() const { return (bits[0] | bits[1] | bits[2] | bits[3]) == 0; }
    bool operator==(const ByteSet&) const = default;
};

using RuleId = uint32_t;

// A rule body before lowering. Build with the static constructors; copies are cheap enough for the
// schema sizes we compile (a few thousand nodes).
struct Expr {
    enum class Kind : uint8_t { kBytes, kSequence, kChoice, kRepeat, kRule };
    static constexpr uint32_t kUnbounded = UINT32_MAX;

    Kind kind = Kind::kSequence;
    ByteSet bytes;               // kBytes
    std::vector<Expr> children;  // kSequence, kChoice; kRepeat has exactly one
    uint32_t min = 0;            // kRepeat
    uint32_t max = 0;            // kRepeat; kUnbounded for no upper bound
    RuleId rule = 0;             // kRule

    static Expr empty() { return Expr{}; }
    static Expr byte_set(ByteSet set);
    static Expr literal(std::string_view text);
    static Expr sequence(std::vector<Expr> items);
    static Expr choice(std::vector<Expr> options);
    static Expr repeat(Expr item, uint32_t min, uint32_t max);
    static Expr optional(Expr item) { return repeat(std::move(item), 0, 1); }
    static Expr reference(RuleId rule);
};

// One step of a lowered alternative.
struct Element {
    enum class Kind : uint8_t { kBytes, kRule, kEnd };
    Kind kind;
    uint32_t index;  // kBytes: into Grammar::byte_sets; kRule: a RuleId; kEnd: unused
};

struct Grammar {
    std::vector<ByteSet> byte_sets;
    std::vector<Element> elements;                         // all alternatives, each ended by kEnd
    std::vector<std::vector<uint32_t>> rule_alternatives;  // (n_rules, n_alternatives) start in `elements`
    RuleId root = 0;
};

class GrammarBuilder {
public:
    RuleId add_rule();
    void define(RuleId rule, Expr body);
    // Lowers every defined rule. Fails when a rule was added but never defined.
    Result<Grammar> build(RuleId root);

private:
    RuleId add_defined(std::vector<std::vector<Element>> alternatives);
    std::vector<std::vector<Element>> lower_alternatives(const Expr& expr);
    void lower_sequence(const Expr& expr, std::vector<Element>& out);
    void lower_repeat(const Expr& expr, std::vector<Element>& out);
    uint32_t intern_bytes(const ByteSet& set);

    std::vector<std::optional<Expr>> bodies_;  // (n_named_rules) until build
    std::vector<std::vector<std::vector<Element>>> lowered_;
    std::vector<ByteSet> byte_sets_;
};

}  // namespace tempered::grammar
