#include "grammar/token_mask.h"

#include <algorithm>
#include <bit>
#include <numeric>

namespace tempered::grammar {

size_t TokenMask::count() const {
    size_t total = 0;
    for (uint64_t word : words_) total += static_cast<size_t>(std::popcount(word));
    return total;
}

// Sorting the tokens by their bytes visits them in depth-first order: each token adds the nodes for the
// part of it not shared with the previous token; subtree ends are filled when a node's prefix stops being
// shared.
TokenTrie::TokenTrie(std::span<const std::string> token_bytes) : n_tokens_(token_bytes.size()) {
    std::vector<uint32_t> order(token_bytes.size());
    std::iota(order.begin(), order.end(), 0);
    std::erase_if(order, [&](uint32_t id) { return token_bytes[id].empty(); });
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
        return token_bytes[a] != token_bytes[b] ? token_bytes[a] < token_bytes[b] : a < b;
    });

    std::vector<uint32_t> open;  // node index at each depth of the current path
    std::string_view previous;
    for (uint32_t id : order) {
        std::string_view bytes = token_bytes[id];
        size_t shared = 0;
        while (shared < previous.size() && shared < bytes.size() && previous[shared] == bytes[shared]) ++shared;
        for (size_t depth = open.size(); depth > shared; --depth) nodes_[open[depth - 1]].subtree_end = static_cast<uint32_t>(nodes_.size());
        open.resize(shared);
        for (size_t depth = shared; depth < bytes.size(); ++depth) {
            open.push_back(static_cast<uint32_t>(nodes_.size()));
            nodes_.push_back({static_cast<uint8_t>(bytes[depth]), static_cast<uint16_t>(depth + 1), 0,
                              static_cast<uint32_t>(token_ids_.size())});
        }
        token_ids_.push_back(id);  // ends at the last node of the path, the newest one or a shared one
        previous = bytes;
    }
    for (uint32_t node : open) nodes_[node].subtree_end = static_cast<uint32_t>(nodes_.size());
}

void TokenTrie::fill_mask(Matcher& matcher, TokenMask& mask) const {
    mask.clear();
    // state_at[d]: the matcher checkpoint after the first d bytes of the current path.
    std::vector<Matcher::Checkpoint> state_at(1, matcher.checkpoint());
    for (size_t i = 0; i < nodes_.size();) {
        const Node& node = nodes_[i];
        matcher.rollback(state_at[node.depth - 1]);
        if (!matcher.accept_byte(node.byte)) {
            i = node.subtree_end;
            continue;
        }
        if (state_at.size() <= node.depth) state_at.resize(node.depth + 1);
        state_at[node.depth] = matcher.checkpoint();
        const uint32_t token_end =
            i + 1 < nodes_.size() ? nodes_[i + 1].token_begin : static_cast<uint32_t>(token_ids_.size());
        for (uint32_t t = node.token_begin; t < token_end; ++t) mask.allow(token_ids_[t]);
        ++i;
    }
    matcher.rollback(state_at[0]);
}

}  // namespace tempered::grammar
