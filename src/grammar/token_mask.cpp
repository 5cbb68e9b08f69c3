#include "grammar/token_mask.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <numeric>

namespace tempered::grammar {

namespace {
uint64_t next_serial() {
    static std::atomic<uint64_t> serial{0};
    return ++serial;
}
}  // namespace

size_t TokenMask::count() const {
    size_t total = 0;
    for (uint64_t word : words_) total += static_cast<size_t>(std::popcount(word));
    return total;
}

// Sorting the tokens by their bytes visits them in depth-first order: each token adds the nodes for the
// part of it not shared with the previous token; subtree ends are filled when a node's prefix stops being
// shared.
TokenTrie::TokenTrie(std::span<const std::string> token_bytes)
    : n_tokens_(token_bytes.size()), serial_(next_serial()), token_bytes_(token_bytes.begin(), token_bytes.end()) {
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
        for (size_t depth = open.size(); depth > shared; --depth)
            nodes_[open[depth - 1]].subtree_end = static_cast<uint32_t>(nodes_.size());
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
        for (uint32_t t = node.token_begin; t < token_end(i); ++t) mask.allow(token_ids_[t]);
        ++i;
    }
    matcher.rollback(state_at[0]);
}

void TokenTrie::classify(Matcher& matcher, std::vector<uint32_t>& accepted, std::vector<uint32_t>& uncertain) const {
    // could_exit[d]: one of the states after 0..d bytes of the current path was complete.
    std::vector<Matcher::Checkpoint> state_at(1, matcher.checkpoint());
    std::vector<bool> could_exit(1, matcher.is_complete());
    for (size_t i = 0; i < nodes_.size();) {
        const Node& node = nodes_[i];
        matcher.rollback(state_at[node.depth - 1]);
        if (!matcher.accept_byte(node.byte)) {
            if (could_exit[node.depth - 1]) {
                const uint32_t subtree_tokens_end = token_end(node.subtree_end - 1);
                for (uint32_t t = node.token_begin; t < subtree_tokens_end; ++t) uncertain.push_back(token_ids_[t]);
            }
            i = node.subtree_end;
            continue;
        }
        if (state_at.size() <= node.depth) state_at.resize(node.depth + 1), could_exit.resize(node.depth + 1);
        state_at[node.depth] = matcher.checkpoint();
        could_exit[node.depth] = could_exit[node.depth - 1] || matcher.is_complete();
        for (uint32_t t = node.token_begin; t < token_end(i); ++t) accepted.push_back(token_ids_[t]);
        ++i;
    }
    matcher.rollback(state_at[0]);
}

void TokenTrie::classify_tokens(Matcher& matcher, std::span<const uint32_t> tokens, std::vector<uint32_t>& accepted,
                                std::vector<uint32_t>& uncertain) const {
    // state_at[k] / could_exit[k]: after the first k bytes of `previous`, for k < state_at.size().
    std::vector<Matcher::Checkpoint> state_at(1, matcher.checkpoint());
    std::vector<bool> could_exit(1, matcher.is_complete());
    std::string_view previous;
    size_t previous_failed_at = std::string_view::npos;
    for (uint32_t token : tokens) {
        const std::string_view bytes = token_bytes_[token];
        size_t shared = 0;
        while (shared < previous.size() && shared < bytes.size() && previous[shared] == bytes[shared]) ++shared;
        const size_t resume = std::min(shared, state_at.size() - 1);
        size_t failed_at = std::string_view::npos;
        if (previous_failed_at != std::string_view::npos && shared > previous_failed_at) {
            failed_at = previous_failed_at;  // same dead prefix, same verdict
        } else {
            matcher.rollback(state_at[resume]);
            state_at.resize(resume + 1);
            could_exit.resize(resume + 1);
            for (size_t k = resume; k < bytes.size(); ++k) {
                if (!matcher.accept_byte(static_cast<uint8_t>(bytes[k]))) {
                    failed_at = k;
                    break;
                }
                state_at.push_back(matcher.checkpoint());
                could_exit.push_back(could_exit.back() || matcher.is_complete());
            }
        }
        if (failed_at == std::string_view::npos) {
            accepted.push_back(token);
        } else if (could_exit[failed_at]) {
            uncertain.push_back(token);
        }
        previous = bytes;
        previous_failed_at = failed_at;
    }
    matcher.rollback(state_at[0]);
}

void TokenTrie::check_tokens(Matcher& matcher, std::span<const uint32_t> tokens, TokenMask& mask) const {
    // state_at[k]: the state after the first k bytes of `previous`, for k < state_at.size().
    std::vector<Matcher::Checkpoint> state_at(1, matcher.checkpoint());
    std::string_view previous;
    size_t previous_failed_at = std::string_view::npos;
    for (uint32_t token : tokens) {
        if (mask.allows(token)) continue;
        const std::string_view bytes = token_bytes_[token];
        size_t shared = 0;
        while (shared < previous.size() && shared < bytes.size() && previous[shared] == bytes[shared]) ++shared;
        if (previous_failed_at != std::string_view::npos && shared > previous_failed_at) continue;  // same dead prefix
        const size_t resume = std::min(shared, state_at.size() - 1);
        matcher.rollback(state_at[resume]);
        state_at.resize(resume + 1);
        previous_failed_at = std::string_view::npos;
        for (size_t k = resume; k < bytes.size(); ++k) {
            if (!matcher.accept_byte(static_cast<uint8_t>(bytes[k]))) {
                previous_failed_at = k;
                break;
            }
            state_at.push_back(matcher.checkpoint());
        }
        if (previous_failed_at == std::string_view::npos) mask.allow(token);
        previous = bytes;
    }
    matcher.rollback(state_at[0]);
}

}  // namespace tempered::grammar
