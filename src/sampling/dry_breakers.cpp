#include "sampling/dry_breakers.h"

#include <algorithm>

namespace tempered {

bool DryBreakers::is_whole_breaker(int32_t token) const {
    auto [first, last] = tails.equal_range(token);
    return std::any_of(first, last, [](const auto& entry) { return entry.second.empty(); });
}

namespace {

void add_tail(DryBreakers& breakers, int32_t head, std::vector<int32_t> tail) {
    auto [first, last] = breakers.tails.equal_range(head);
    if (std::any_of(first, last, [&](const auto& entry) { return entry.second == tail; })) return;
    breakers.tails.emplace(head, std::move(tail));
}

// Where `text` ends with a proper start of `breaker` (it does not contain the whole of it), that start's
// length for each such place: "a\nb" ending "..a\n" gives 2.
std::vector<size_t> overlaps_at_end(std::string_view text, std::string_view breaker) {
    std::vector<size_t> lengths;
    for (size_t pos = text.find(breaker.front()); pos != std::string_view::npos;
         pos = text.find(breaker.front(), pos + 1)) {
        const std::string_view rest = text.substr(pos);
        if (rest.size() < breaker.size() && breaker.starts_with(rest)) lengths.push_back(rest.size());
    }
    return lengths;
}

void add_breaker(DryBreakers& breakers, std::string_view breaker, std::span<const std::string> token_texts,
                 const DryTokenize& tokenize) {
    for (size_t id = 0; id < token_texts.size(); ++id) {
        const std::string_view text = token_texts[id];
        const auto head = static_cast<int32_t>(id);
        if (text.find(breaker) != std::string_view::npos) {
            breakers.tails.emplace(head, std::vector<int32_t>{});
            continue;
        }
        for (size_t overlap : overlaps_at_end(text, breaker)) {
            std::vector<int32_t> tail = tokenize(breaker.substr(overlap));
            if (tail.size() > kMaxDryBreakerTail) tail.resize(kMaxDryBreakerTail);
            add_tail(breakers, head, std::move(tail));
        }
    }
}

}  // namespace

DryBreakers make_dry_breakers(std::span<const std::string> breakers, std::span<const std::string> token_texts,
                              const DryTokenize& tokenize) {
    DryBreakers result;
    for (const std::string& breaker : breakers) {
        if (breaker.empty()) continue;
        add_breaker(result, std::string_view(breaker).substr(0, kMaxDryBreakerBytes), token_texts, tokenize);
    }
    return result;
}

}  // namespace tempered
