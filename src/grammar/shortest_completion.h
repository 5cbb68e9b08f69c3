// How far a sentence is from complete: the fewest bytes any derivation needs from each rule and from each
// position of an alternative, so the fewest bytes that complete a matcher's sentence (over all its stacks), and
// one such completion spelled out. A constrained answer near its token limit is closed along it
// (engine/grammar_closing.h), so it always parses; a request whose limit cannot hold the shortest sentence at
// all is refused (server/structured_output.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/matcher.h"

namespace tempered::grammar {

class CompletionLengths {
public:
    static constexpr uint32_t kNever = UINT32_MAX;  // no finite derivation

    // The grammar must outlive this.
    explicit CompletionLengths(const Grammar& grammar);

    uint32_t of_rule(RuleId rule) const { return rule_min_[rule]; }
    // From an element of an alternative (a leaf's byte set, or a return position) to that alternative's end.
    uint32_t from_position(uint32_t position) const { return suffix_min_[position]; }
    // The fewest bytes after which `matcher`'s sentence is complete: 0 when it already is.
    uint32_t distance(const Matcher& matcher) const;
    // Bytes of one completion of that length ("" when complete; nullopt when none is finite).
    std::optional<std::string> completion(const Matcher& matcher) const;
    // One shortest sentence of the whole grammar.
    std::optional<std::string> shortest_sentence() const;

private:
    void compute_rule_lengths();
    uint32_t stack_distance(const std::vector<uint32_t>& context) const;
    bool append_from(uint32_t position, std::string& out, int depth) const;

    const Grammar& grammar_;
    std::vector<uint32_t> rule_min_;    // per rule
    std::vector<uint32_t> best_alt_;    // per rule: the start of an alternative of that length
    std::vector<uint32_t> suffix_min_;  // per element
};

}  // namespace tempered::grammar
