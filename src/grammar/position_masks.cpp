#include "grammar/position_masks.h"

#include <algorithm>

namespace tempered::grammar {

MaskGenerator::MaskGenerator(const Grammar& grammar, const TokenTrie& trie) : grammar_(grammar), trie_(trie) {}

const MaskGenerator::PositionTokens& MaskGenerator::tokens_at(std::span<const uint32_t> context) {
    std::vector<uint32_t> key(context.begin(), context.end());
    if (auto known = contexts_.find(key); known != contexts_.end()) return known->second;
    PositionTokens tokens = classify(context);
    return contexts_.emplace(std::move(key), std::move(tokens)).first->second;
}

MaskGenerator::PositionTokens MaskGenerator::classify(std::span<const uint32_t> context) {
    Matcher local = Matcher::at_context(grammar_, context);
    PositionTokens tokens;
    std::vector<uint32_t> accepted;
    const PositionTokens* inner = nullptr;
    if (context.size() == 1) {
        trie_.classify(local, accepted, tokens.uncertain);
    } else {
        inner = &tokens_at(context.first(context.size() - 1));  // map nodes stay where they are
        trie_.classify_tokens(local, inner->uncertain, accepted, tokens.uncertain);
        if (!inner->dense) accepted.insert(accepted.end(), inner->accepted_ids.begin(), inner->accepted_ids.end());
    }
    // A bitmask costs n_tokens/64 words to merge; a list costs one write per id.
    tokens.dense = (inner && inner->dense) || accepted.size() > trie_.n_tokens() / 64;
    if (tokens.dense) {
        tokens.accepted_bits = inner && inner->dense ? inner->accepted_bits : TokenMask(trie_.n_tokens());
        for (uint32_t id : accepted) tokens.accepted_bits.allow(id);
    } else {
        tokens.accepted_ids = std::move(accepted);
    }
    return tokens;
}

void MaskGenerator::fill_mask(Matcher& matcher, TokenMask& mask) {
    mask.clear();
    merged_.clear();
    for (size_t i = 0; i < matcher.leaf_count(); ++i) {
        matcher.leaf_context(i, kContextDepth, context_);
        const PositionTokens* tokens = &tokens_at(context_);
        if (std::find(merged_.begin(), merged_.end(), tokens) != merged_.end()) continue;
        merged_.push_back(tokens);
        if (tokens->dense) {
            mask.allow_all(tokens->accepted_bits);
        } else {
            for (uint32_t id : tokens->accepted_ids) mask.allow(id);
        }
    }
    // Checked after every accepted set is in, so tokens already allowed are skipped.
    for (const PositionTokens* tokens : merged_) trie_.check_tokens(matcher, tokens->uncertain, mask);
}

}  // namespace tempered::grammar
