#include "grammar/position_masks.h"

#include <algorithm>

namespace tempered::grammar {

MaskGenerator::MaskGenerator(const Grammar& grammar, const TokenTrie& trie) : grammar_(grammar), trie_(trie) {}

const MaskGenerator::PositionTokens& MaskGenerator::tokens_at(const std::vector<uint32_t>& context) {
    if (auto known = contexts_.find(context); known != contexts_.end()) return known->second;
    Matcher local = Matcher::at_context(grammar_, context);
    PositionTokens tokens;
    std::vector<uint32_t> accepted;
    trie_.classify(local, accepted, tokens.uncertain);
    // A bitmask costs n_tokens/64 words to merge; a list costs one write per id.
    tokens.dense = accepted.size() > trie_.n_tokens() / 64;
    if (tokens.dense) {
        tokens.accepted_bits = TokenMask(trie_.n_tokens());
        for (uint32_t id : accepted) tokens.accepted_bits.allow(id);
    } else {
        tokens.accepted_ids = std::move(accepted);
    }
    return contexts_.emplace(context, std::move(tokens)).first->second;
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
