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
//
// Classifications are also shared between generators over the same trie, keyed by the context's
// canonical language (context_key.h): a new request's schema starts with the string bodies, numbers and
// literals earlier grammars already classified. The shared store is bounded and thread-safe; a
// generator's own map is not.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/token_mask.h"

namespace tempered::grammar {

// The tokens a context accepts whole, and those it may accept depending on the rest of the stack.
struct ContextTokens {
    TokenMask accepted_bits{0};          // used when many tokens are accepted
    std::vector<uint32_t> accepted_ids;  // used otherwise
    bool dense = false;
    std::vector<uint32_t> uncertain;  // trie order
};

// Classifications of contexts by their context_key, for every generator over one trie.
class SharedClassifications {
public:
    static std::shared_ptr<SharedClassifications> for_trie(const TokenTrie& trie);

    std::shared_ptr<const ContextTokens> find(const std::string& key) const;
    // Keeps the first classification of a key; stops taking new keys once kCapacityBytes are held.
    void insert(std::string key, std::shared_ptr<const ContextTokens> tokens);

    static constexpr size_t kCapacityBytes = size_t{256} << 20;
    static constexpr size_t kMaxKeyBytes = 1 << 14;

private:
    mutable std::mutex mutex_;
    size_t bytes_ = 0;
    std::unordered_map<std::string, std::shared_ptr<const ContextTokens>> entries_;
};

// Classifies into the trie's shared store the contexts every JSON grammar meets (string bodies, keys,
// numbers, literals) by generating masks along a few canonical JSON texts. Call once per vocabulary, at
// model load, to keep that first full trie walk out of the first constrained request.
void prewarm_json_contexts(const TokenTrie& trie);

class MaskGenerator {
public:
    // Both must outlive the generator.
    MaskGenerator(const Grammar& grammar, const TokenTrie& trie);

    // The same mask as trie.fill_mask(matcher, mask), usually much faster; the matcher is left as it was.
    void fill_mask(Matcher& matcher, TokenMask& mask);

    static constexpr size_t kContextDepth = 4;

    size_t classified_contexts() const { return contexts_.size(); }

private:
    const ContextTokens& tokens_at(std::span<const uint32_t> context);
    ContextTokens classify(std::span<const uint32_t> context);

    const Grammar& grammar_;
    const TokenTrie& trie_;
    std::shared_ptr<SharedClassifications> shared_;
    std::map<std::vector<uint32_t>, std::shared_ptr<const ContextTokens>> contexts_;
    std::vector<const ContextTokens*> merged_;  // contexts already merged into the current mask
    std::vector<uint32_t> context_;             // scratch
};

}  // namespace tempered::grammar
