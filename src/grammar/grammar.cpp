#include "grammar/grammar.h"

#include <utility>

namespace tempered::grammar {

ByteSet ByteSet::single(uint8_t byte) {
    ByteSet set;
    set.add(byte);
    return set;
}

ByteSet ByteSet::range(uint8_t first, uint8_t last) {
    ByteSet set;
    set.add_range(first, last);
    return set;
}

void ByteSet::add_range(uint8_t first, uint8_t last) {
    for (unsigned byte = first; byte <= last; ++byte) add(static_cast<uint8_t>(byte));
}

void ByteSet::add_all(const ByteSet& other) {
    for (size_t i = 0; i < bits.size(); ++i) bits[i] |= other.bits[i];
}

Expr Expr::byte_set(ByteSet set) {
    Expr expr;
    expr.kind = Kind::kBytes;
    expr.bytes = set;
    return expr;
}

Expr Expr::literal(std::string_view text) {
    Expr expr;
    for (char c : text) expr.children.push_back(byte_set(ByteSet::single(static_cast<uint8_t>(c))));
    return expr;
}

Expr Expr::sequence(std::vector<Expr> items) {
    Expr expr;
    expr.children = std::move(items);
    return expr;
}

Expr Expr::choice(std::vector<Expr> options) {
    if (options.size() == 1) return std::move(options[0]);
    Expr expr;
    expr.kind = Kind::kChoice;
    expr.children = std::move(options);
    return expr;
}

Expr Expr::repeat(Expr item, uint32_t min, uint32_t max) {
    Expr expr;
    expr.kind = Kind::kRepeat;
    expr.children.push_back(std::move(item));
    expr.min = min;
    expr.max = max;
    return expr;
}

Expr Expr::reference(RuleId rule) {
    Expr expr;
    expr.kind = Kind::kRule;
    expr.rule = rule;
    return expr;
}

RuleId GrammarBuilder::add_rule() {
    bodies_.emplace_back();
    return static_cast<RuleId>(bodies_.size() - 1);
}

void GrammarBuilder::define(RuleId rule, Expr body) { bodies_.at(rule) = std::move(body); }

Result<Grammar> GrammarBuilder::build(RuleId root) {
    lowered_.assign(bodies_.size(), {});
    for (RuleId rule = 0; rule < bodies_.size(); ++rule) {
        if (!bodies_[rule]) return Error{"grammar rule " + std::to_string(rule) + " was never defined"};
        lowered_[rule] = lower_alternatives(*bodies_[rule]);
    }
    Grammar grammar;
    grammar.root = root;
    grammar.byte_sets = std::move(byte_sets_);
    for (const auto& alternatives : lowered_) {
        auto& starts = grammar.rule_alternatives.emplace_back();
        for (const auto& alternative : alternatives) {
            starts.push_back(static_cast<uint32_t>(grammar.elements.size()));
            grammar.elements.insert(grammar.elements.end(), alternative.begin(), alternative.end());
            grammar.elements.push_back({Element::Kind::kEnd, 0});
        }
    }
    bodies_.clear();
    lowered_.clear();
    byte_sets_.clear();
    return grammar;
}

RuleId GrammarBuilder::add_defined(std::vector<std::vector<Element>> alternatives) {
    lowered_.push_back(std::move(alternatives));
    return static_cast<RuleId>(lowered_.size() - 1);
}

std::vector<std::vector<Element>> GrammarBuilder::lower_alternatives(const Expr& expr) {
    std::vector<std::vector<Element>> alternatives;
    if (expr.kind == Expr::Kind::kChoice) {
        for (const Expr& option : expr.children) lower_sequence(option, alternatives.emplace_back());
    } else {
        lower_sequence(expr, alternatives.emplace_back());
    }
    return alternatives;
}

void GrammarBuilder::lower_sequence(const Expr& expr, std::vector<Element>& out) {
    switch (expr.kind) {
        case Expr::Kind::kBytes: out.push_back({Element::Kind::kBytes, intern_bytes(expr.bytes)}); return;
        case Expr::Kind::kSequence:
            for (const Expr& item : expr.children) lower_sequence(item, out);
            return;
        case Expr::Kind::kChoice: {
            RuleId rule = add_defined(lower_alternatives(expr));
            out.push_back({Element::Kind::kRule, rule});
            return;
        }
        case Expr::Kind::kRepeat: lower_repeat(expr, out); return;
        case Expr::Kind::kRule: out.push_back({Element::Kind::kRule, expr.rule}); return;
    }
}

// item{min,max}: `min` copies inline, then a chain of optional copies (bounded) or one right-recursive
// rule R ::= item R | "" (unbounded). The item becomes its own rule unless it is a single byte set, so the
// copies share one lowering instead of duplicating nested rules.
void GrammarBuilder::lower_repeat(const Expr& expr, std::vector<Element>& out) {
    const Expr& item = expr.children.at(0);
    Element step = item.kind == Expr::Kind::kBytes
                       ? Element{Element::Kind::kBytes, intern_bytes(item.bytes)}
                       : Element{Element::Kind::kRule, add_defined(lower_alternatives(item))};
    for (uint32_t i = 0; i < expr.min; ++i) out.push_back(step);
    if (expr.max == Expr::kUnbounded) {
        RuleId loop = add_defined({});
        lowered_[loop] = {{step, {Element::Kind::kRule, loop}}, {}};
        out.push_back({Element::Kind::kRule, loop});
        return;
    }
    if (expr.max <= expr.min) return;
    RuleId tail = add_defined({{step}, {}});
    for (uint32_t extra = expr.max - expr.min; extra > 1; --extra) {
        tail = add_defined({{step, {Element::Kind::kRule, tail}}, {}});
    }
    out.push_back({Element::Kind::kRule, tail});
}

uint32_t GrammarBuilder::intern_bytes(const ByteSet& set) {
    for (size_t i = 0; i < byte_sets_.size(); ++i) {
        if (byte_sets_[i] == set) return static_cast<uint32_t>(i);
    }
    byte_sets_.push_back(set);
    return static_cast<uint32_t>(byte_sets_.size() - 1);
}

}  // namespace tempered::grammar
