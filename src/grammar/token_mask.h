// The vocabulary as a byte trie, and the set of tokens a Matcher state allows.
//
// The trie is laid out in depth-first order with each node's subtree end, so the mask is one forward
// scan: advance the matcher by the node's byte (rolling back to the parent's state first), and when the
// byte is rejected skip the whole subtree: every token starting with that prefix is rejected at once.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "grammar/matcher.h"

namespace tempered::grammar {

// One bit per token id.
class TokenMask {
public:
    explicit TokenMask(size_t n_tokens) : n_tokens_(n_tokens), words_((n_tokens + 63) / 64, 0) {}
    void allow(uint32_t token) { words_[token >> 6] |= uint64_t{1} << (token & 63); }
    bool allows(uint32_t token) const { return (words_[token >> 6] >> (token & 63)) & 1; }
    void clear() { std::fill(words_.begin(), words_.end(), 0); }
    void allow_all(const TokenMask& other) {
        for (size_t i = 0; i < words_.size(); ++i) words_[i] |= other.words_[i];
    }
    size_t size() const { return n_tokens_; }
    // Bit (token & 63) of word (token >> 6); bits past size() are zero.
    std::span<const uint64_t> words() const { return words_; }
    size_t count() const;

private:
    size_t n_tokens_;
    std::vector<uint64_t> words_;
};

class TokenTrie {
public:
    // `token_bytes[id]` is what token `id` appends to the output. An empty entry (control tokens the
    // caller handles itself, such as end-of-sequence) is never part of a mask.
    explicit TokenTrie(std::span<const std::string> token_bytes);

    size_t n_tokens() const { return n_tokens_; }
    // Distinct for every trie built in this process: names the vocabulary in caches shared across grammars.
    uint64_t serial() const { return serial_; }
    size_t n_nodes() const { return nodes_.size(); }

    // Sets in `mask` (cleared first) every token whose bytes `matcher` accepts from its current state.
    // The matcher is left in the state it started in.
    void fill_mask(Matcher& matcher, TokenMask& mask) const;

    // For a matcher from Matcher::at_position: the tokens it accepts whole (`accepted`), and those it
    // rejects only after a point where its alternative could have ended (`uncertain`: whether they fit
    // depends on what follows in the caller's stack). Both lists come in trie order.
    void classify(Matcher& matcher, std::vector<uint32_t>& accepted, std::vector<uint32_t>& uncertain) const;
    // classify restricted to `tokens` (in trie order; common prefixes are matched once): appends each to
    // `accepted` or `uncertain` as classify would have, or drops it (rejected before any exit).
    void classify_tokens(Matcher& matcher, std::span<const uint32_t> tokens, std::vector<uint32_t>& accepted,
                         std::vector<uint32_t>& uncertain) const;
    // Allows in `mask` those of `tokens` (in trie order) that `matcher` accepts; common prefixes are
    // matched once.
    void check_tokens(Matcher& matcher, std::span<const uint32_t> tokens, TokenMask& mask) const;

private:
    struct Node {
        uint8_t byte;
        uint16_t depth;        // 1 for the first byte of a token
        uint32_t subtree_end;  // index one past this node's last descendant
        uint32_t token_begin;  // tokens ending here: token_ids_[token_begin, next node's token_begin)
    };

    uint32_t token_end(size_t node) const {
        return node + 1 < nodes_.size() ? nodes_[node + 1].token_begin : static_cast<uint32_t>(token_ids_.size());
    }

    size_t n_tokens_;
    uint64_t serial_;
    std::vector<std::string> token_bytes_;
    std::vector<Node> nodes_;  // depth-first order
    std::vector<uint32_t> token_ids_;
};

}  // namespace tempered::grammar
