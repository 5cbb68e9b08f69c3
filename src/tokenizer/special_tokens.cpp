#include "tokenizer/special_tokens.h"

#include <algorithm>

namespace tempered {

SpecialTokenMatcher::SpecialTokenMatcher(const Vocab& vocab) {
    for (int32_t id = 0; id < vocab.size(); ++id) {
        if (vocab.attrs[id] & (kAttrControl | kAttrUserDefined | kAttrUnknown)) specials_.push_back(id);
    }
    std::stable_sort(specials_.begin(), specials_.end(),
                     [&](int32_t a, int32_t b) { return vocab.texts[a].size() > vocab.texts[b].size(); });

    root_children_.fill(-1);
    node_special_.assign(1, -1);  // the root
    for (size_t index = 0; index < specials_.size(); ++index) {
        const std::string& text = vocab.texts[specials_[index]];
        int32_t node = 0;
        for (size_t i = 0; i < text.size(); ++i) {
            const auto byte = static_cast<uint8_t>(text[i]);
            int32_t next = child(node, byte);
            if (next < 0) {
                next = static_cast<int32_t>(node_special_.size());
                node_special_.push_back(-1);
                if (node == 0) {
                    root_children_[byte] = next;
                } else {
                    children_.emplace((static_cast<uint64_t>(node) << 8) | byte, next);
                }
            }
            node = next;
        }
        if (node_special_[node] < 0) node_special_[node] = static_cast<int32_t>(index);
    }
}

int32_t SpecialTokenMatcher::child(int32_t node, uint8_t byte) const {
    if (node == 0) return root_children_[byte];
    const auto it = children_.find((static_cast<uint64_t>(node) << 8) | byte);
    return it == children_.end() ? -1 : it->second;
}

std::vector<TextFragment> SpecialTokenMatcher::partition(std::string_view text, const Vocab& vocab,
                                                         bool parse_special) const {
    // Every occurrence of every special token taking part: (claim order of the token, start).
    std::vector<std::pair<int32_t, size_t>> occurrences;
    for (size_t start = 0; start < text.size(); ++start) {
        int32_t node = root_children_[static_cast<uint8_t>(text[start])];
        for (size_t end = start + 1; node >= 0; ++end) {
            const int32_t index = node_special_[node];
            if (index >= 0 && (parse_special || !(vocab.attrs[specials_[index]] & (kAttrControl | kAttrUnknown)))) {
                occurrences.emplace_back(index, start);
            }
            if (end == text.size()) break;
            node = child(node, static_cast<uint8_t>(text[end]));
        }
    }
    if (occurrences.empty()) {
        if (text.empty()) return {};
        return {TextFragment{-1, 0, text.size()}};
    }
    std::sort(occurrences.begin(), occurrences.end());

    std::vector<uint8_t> claimed(text.size(), 0);
    std::vector<std::pair<size_t, int32_t>> matches;  // (start, token)
    for (const auto& [index, start] : occurrences) {
        const int32_t token = specials_[index];
        const size_t length = vocab.texts[token].size();
        if (std::any_of(claimed.begin() + start, claimed.begin() + start + length, [](uint8_t c) { return c; })) {
            continue;
        }
        std::fill(claimed.begin() + start, claimed.begin() + start + length, 1);
        matches.emplace_back(start, token);
    }
    std::sort(matches.begin(), matches.end());

    std::vector<TextFragment> fragments;
    size_t position = 0;
    for (const auto& [start, token] : matches) {
        if (start > position) fragments.push_back(TextFragment{-1, position, start - position});
        const size_t length = vocab.texts[token].size();
        fragments.push_back(TextFragment{token, start, length});
        position = start + length;
    }
    if (position < text.size()) fragments.push_back(TextFragment{-1, position, text.size() - position});
    return fragments;
}

}  // namespace tempered
