// Token masks from per-position precomputation (the "context-independent tokens" of issue 12).
//
// Every leaf of a matcher state is a stack whose top sits at a byte-set element. Whether a token fits is,
// for most tokens, decided by the top few frames of that stack (its context): the token is accepted whole
// there, or dies there. Only tokens that run past the outermost frame of the context depend on the rest
// of the stack. So each context (the top kContextDepth positions) is classified once, by a trie walk from
// Matcher::at_context, into `accepted` and `uncertain`, and a mask is the union of the leaves' accepted
// sets plus the uncertain tokens the real state accepts. With only the top frame, a JSON string's
// character would be its own context and every multi-byte token uncertain; a few frames take in the
// whole string up to its closing quote. Contexts are classified lazily, on first sight, and kept for the
// generator's lifetime: one generator per compiled grammar (not thread-safe while it still learns).
//
// A context is classified from the one without its outermost frame: what that shorter context accepts,
// the longer one accepts too, and what it rejects before it could have ended, the longer one rejects, so
// only the shorter context's uncertain tokens are walked again. Only the innermost frame needs a walk of
// the whole trie, and contexts that share inner frames share that work: every string property of a
// schema walks the string body once (its inner frames sit in the one shared string rule), and each
// further property only rechecks the few tokens that could close the string.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/token_mask.h"

namespace tempered::grammar {

class MaskGenerator {
public:
    // Both must outlive the generator.
    MaskGenerator(const Grammar& grammar, const TokenTrie& trie);

    // The same mask as trie.fill_mask(matcher, mask), usually much faster; the matcher is left as it was.
    void fill_mask(Matcher& matcher, TokenMask& mask);

    static constexpr size_t kContextDepth = 4;

    size_t classified_contexts() const { return contexts_.size(); }

private:
    struct PositionTokens {
        TokenMask accepted_bits{0};          // used when many tokens are accepted
        std::vector<uint32_t> accepted_ids;  // used otherwise
        bool dense = false;
        std::vector<uint32_t> uncertain;  // trie order
    };

    const PositionTokens& tokens_at(std::span<const uint32_t> context);
    PositionTokens classify(std::span<const uint32_t> context);

    const Grammar& grammar_;
    const TokenTrie& trie_;
    std::map<std::vector<uint32_t>, PositionTokens> contexts_;
    std::vector<const PositionTokens*> merged_;  // contexts already merged into the current mask
    std::vector<uint32_t> context_;              // scratch
};

}  // namespace tempered::grammar
