#include "grammar/left_recursion.h"

#include <utility>
#include <vector>

namespace tempered::grammar {
namespace {

// Rules that can match the empty string (a fixpoint: an alternative of nullable rule references only).
std::vector<bool> nullable_rules(const Grammar& grammar) {
    std::vector<bool> nullable(grammar.rule_alternatives.size(), false);
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t rule = 0; rule < nullable.size(); ++rule) {
            if (nullable[rule]) continue;
            for (uint32_t at : grammar.rule_alternatives[rule]) {
                while (grammar.elements[at].kind == Element::Kind::kRule && nullable[grammar.elements[at].index]) ++at;
                if (grammar.elements[at].kind == Element::Kind::kEnd) {
                    nullable[rule] = changed = true;
                    break;
                }
            }
        }
    }
    return nullable;
}

struct Edge {
    uint32_t to;
    bool tail;  // the reference is its alternative's last element
};

// rule -> the rules it enters before consuming a byte.
std::vector<std::vector<Edge>> leading_references(const Grammar& grammar, const std::vector<bool>& nullable) {
    std::vector<std::vector<Edge>> edges(grammar.rule_alternatives.size());
    for (size_t rule = 0; rule < edges.size(); ++rule) {
        for (uint32_t at : grammar.rule_alternatives[rule]) {
            for (; grammar.elements[at].kind == Element::Kind::kRule; ++at) {
                const uint32_t to = grammar.elements[at].index;
                edges[rule].push_back({to, grammar.elements[at + 1].kind == Element::Kind::kEnd});
                if (!nullable[to]) break;
            }
        }
    }
    return edges;
}

// Strongly connected components (Tarjan's, iterative: a grammar may chain thousands of rules).
std::vector<uint32_t> components(const std::vector<std::vector<Edge>>& edges) {
    const size_t n = edges.size();
    constexpr uint32_t kUnseen = UINT32_MAX;
    std::vector<uint32_t> index(n, kUnseen), low(n, 0), component(n, kUnseen), stack;
    std::vector<bool> on_stack(n, false);
    std::vector<std::pair<uint32_t, size_t>> work;  // (rule, next edge)
    uint32_t next_index = 0, next_component = 0;
    for (uint32_t start = 0; start < n; ++start) {
        if (index[start] != kUnseen) continue;
        work.push_back({start, 0});
        while (!work.empty()) {
            auto& [rule, edge] = work.back();
            if (edge == 0 && index[rule] == kUnseen) {
                index[rule] = low[rule] = next_index++;
                stack.push_back(rule);
                on_stack[rule] = true;
            }
            if (edge < edges[rule].size()) {
                const uint32_t to = edges[rule][edge++].to;
                if (index[to] == kUnseen) {
                    work.push_back({to, 0});
                } else if (on_stack[to]) {
                    low[rule] = std::min(low[rule], index[to]);
                }
                continue;
            }
            const uint32_t done = rule;
            work.pop_back();
            if (!work.empty()) low[work.back().first] = std::min(low[work.back().first], low[done]);
            if (low[done] != index[done]) continue;
            for (uint32_t member = kUnseen; member != done;) {
                member = stack.back();
                stack.pop_back();
                on_stack[member] = false;
                component[member] = next_component;
            }
            ++next_component;
        }
    }
    return component;
}

}  // namespace

std::optional<RuleId> find_left_recursion(const Grammar& grammar) {
    const auto edges = leading_references(grammar, nullable_rules(grammar));
    const auto component = components(edges);
    for (uint32_t rule = 0; rule < edges.size(); ++rule)
        for (const Edge& edge : edges[rule])
            if (!edge.tail && component[edge.to] == component[rule]) return rule;
    return std::nullopt;
}

}  // namespace tempered::grammar
