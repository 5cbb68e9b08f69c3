#include "grammar/shortest_completion.h"

#include <functional>
#include <limits>
#include <queue>
#include <utility>

namespace tempered::grammar {
namespace {

constexpr uint32_t kNever = CompletionLengths::kNever;
constexpr int kMaxDepth = 10000;  // a shortest derivation nests far less; this only guards the recursion

uint32_t saturating_add(uint32_t a, uint32_t b) { return a >= kNever - b ? kNever : a + b; }

// A byte the set accepts, printable ASCII when it has one (the completion is text a client may read).
uint8_t pick_byte(const ByteSet& set) {
    for (int byte = 0x20; byte < 0x7f; ++byte)
        if (set.contains(static_cast<uint8_t>(byte))) return static_cast<uint8_t>(byte);
    for (int byte = 0; byte < 256; ++byte)
        if (set.contains(static_cast<uint8_t>(byte))) return static_cast<uint8_t>(byte);
    return 0;
}

}  // namespace

CompletionLengths::CompletionLengths(const Grammar& grammar)
    : grammar_(grammar),
      rule_min_(grammar.rule_alternatives.size(), kNever),
      best_alt_(grammar.rule_alternatives.size(), 0),
      suffix_min_(grammar.elements.size(), kNever) {
    compute_rule_lengths();
    // Each alternative's suffixes, from its end backwards.
    for (size_t at = grammar.elements.size(); at-- > 0;) {
        const Element& element = grammar.elements[at];
        uint32_t cost = 0;
        if (element.kind == Element::Kind::kBytes) cost = 1;
        if (element.kind == Element::Kind::kRule) cost = rule_min_[element.index];
        suffix_min_[at] = element.kind == Element::Kind::kEnd ? 0 : saturating_add(cost, suffix_min_[at + 1]);
    }
}

// Knuth's generalisation of Dijkstra to grammars: an alternative's length is a sum of non-negative parts, so the
// rule with the smallest tentative length is final when it leaves the queue, and each alternative is summed again
// only when one of the rules it names becomes final: O(grammar size x references per alternative), whatever the
// order of the rules (a client's GBNF may chain thousands of them backwards).
void CompletionLengths::compute_rule_lengths() {
    const auto& rules = grammar_.rule_alternatives;
    std::vector<std::vector<std::pair<RuleId, uint32_t>>> users(rules.size());  // rule -> (rule, alternative start)
    std::vector<uint32_t> tentative(rules.size(), kNever);
    std::vector<bool> final_(rules.size(), false);
    using Entry = std::pair<uint32_t, RuleId>;
    std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
    const auto alternative_length = [&](uint32_t start) {
        uint32_t total = 0;
        for (uint32_t at = start; grammar_.elements[at].kind != Element::Kind::kEnd; ++at) {
            const Element& element = grammar_.elements[at];
            const uint32_t part = element.kind == Element::Kind::kBytes ? 1
                                  : final_[element.index]               ? rule_min_[element.index]
                                                                        : kNever;
            total = saturating_add(total, part);
            if (total == kNever) break;
        }
        return total;
    };
    const auto offer = [&](RuleId rule, uint32_t start) {
        const uint32_t length = alternative_length(start);
        if (length < tentative[rule]) {
            tentative[rule] = length;
            best_alt_[rule] = start;
            queue.push({length, rule});
        }
    };
    for (RuleId rule = 0; rule < rules.size(); ++rule)
        for (uint32_t start : rules[rule]) {
            for (uint32_t at = start; grammar_.elements[at].kind != Element::Kind::kEnd; ++at)
                if (grammar_.elements[at].kind == Element::Kind::kRule)
                    users[grammar_.elements[at].index].push_back({rule, start});
            offer(rule, start);
        }
    while (!queue.empty()) {
        const auto [length, rule] = queue.top();
        queue.pop();
        if (final_[rule] || length != tentative[rule]) continue;
        final_[rule] = true;
        rule_min_[rule] = length;
        for (const auto& [user, start] : users[rule])
            if (!final_[user]) offer(user, start);
    }
}

uint32_t CompletionLengths::stack_distance(const std::vector<uint32_t>& context) const {
    uint32_t total = 0;
    for (uint32_t position : context) total = saturating_add(total, suffix_min_[position]);
    return total;
}

uint32_t CompletionLengths::distance(const Matcher& matcher) const {
    if (matcher.is_complete()) return 0;
    uint32_t best = kNever;
    std::vector<uint32_t> context;
    for (size_t leaf = 0; leaf < matcher.leaf_count(); ++leaf) {
        matcher.leaf_context(leaf, std::numeric_limits<size_t>::max(), context);
        best = std::min(best, stack_distance(context));
    }
    return best;
}

bool CompletionLengths::append_from(uint32_t position, std::string& out, int depth) const {
    if (depth > kMaxDepth) return false;
    for (uint32_t at = position; grammar_.elements[at].kind != Element::Kind::kEnd; ++at) {
        const Element& element = grammar_.elements[at];
        if (element.kind == Element::Kind::kBytes) {
            out.push_back(static_cast<char>(pick_byte(grammar_.byte_sets[element.index])));
        } else if (rule_min_[element.index] == kNever || !append_from(best_alt_[element.index], out, depth + 1)) {
            return false;
        }
    }
    return true;
}

std::optional<std::string> CompletionLengths::completion(const Matcher& matcher) const {
    if (matcher.is_complete()) return std::string();
    std::vector<uint32_t> context, best_context;
    uint32_t best = kNever;
    for (size_t leaf = 0; leaf < matcher.leaf_count(); ++leaf) {
        matcher.leaf_context(leaf, std::numeric_limits<size_t>::max(), context);
        const uint32_t length = stack_distance(context);
        if (length < best) {
            best = length;
            best_context = context;
        }
    }
    if (best == kNever) return std::nullopt;
    std::string out;
    out.reserve(best);
    // The leaf's own alternative from its byte set on, then each enclosing rule's rest, innermost first.
    for (uint32_t position : best_context)
        if (!append_from(position, out, 0)) return std::nullopt;
    return out;
}

std::optional<std::string> CompletionLengths::shortest_sentence() const {
    if (grammar_.root >= rule_min_.size() || rule_min_[grammar_.root] == kNever) return std::nullopt;
    std::string out;
    if (!append_from(best_alt_[grammar_.root], out, 0)) return std::nullopt;
    return out;
}

}  // namespace tempered::grammar
