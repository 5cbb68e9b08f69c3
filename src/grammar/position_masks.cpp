#include "grammar/position_masks.h"

#include <algorithm>
#include <string_view>

#include "grammar/context_key.h"
#include "grammar/json_schema.h"

namespace tempered::grammar {

std::shared_ptr<SharedClassifications> SharedClassifications::for_trie(const TokenTrie& trie) {
    // Newest tries first out of mind last: a server keeps one trie per model; tests build many small ones.
    static std::mutex mutex;
    static std::map<uint64_t, std::shared_ptr<SharedClassifications>> by_trie;
    constexpr size_t kTries = 4;
    std::lock_guard lock(mutex);
    auto& shared = by_trie[trie.serial()];
    if (!shared) shared = std::make_shared<SharedClassifications>();
    auto result = shared;
    while (by_trie.size() > kTries) by_trie.erase(by_trie.begin());
    return result;
}

std::shared_ptr<const ContextTokens> SharedClassifications::find(const std::string& key) const {
    std::lock_guard lock(mutex_);
    auto found = entries_.find(key);
    return found == entries_.end() ? nullptr : found->second;
}

void SharedClassifications::insert(std::string key, std::shared_ptr<const ContextTokens> tokens) {
    const size_t bytes =
        key.size() + tokens->accepted_bits.size() / 8 + 4 * (tokens->accepted_ids.size() + tokens->uncertain.size());
    std::lock_guard lock(mutex_);
    if (bytes_ + bytes > kCapacityBytes) return;
    if (entries_.try_emplace(std::move(key), std::move(tokens)).second) bytes_ += bytes;
}

MaskGenerator::MaskGenerator(const Grammar& grammar, const TokenTrie& trie)
    : grammar_(grammar), trie_(trie), shared_(SharedClassifications::for_trie(trie)) {}

const ContextTokens& MaskGenerator::tokens_at(std::span<const uint32_t> context) {
    std::vector<uint32_t> positions(context.begin(), context.end());
    if (auto known = contexts_.find(positions); known != contexts_.end()) return *known->second;
    const auto key = context_key(grammar_, context, SharedClassifications::kMaxKeyBytes);
    std::shared_ptr<const ContextTokens> tokens = key ? shared_->find(*key) : nullptr;
    if (!tokens) {
        tokens = std::make_shared<const ContextTokens>(classify(context));
        if (key) shared_->insert(*key, tokens);
    }
    return *contexts_.emplace(std::move(positions), std::move(tokens)).first->second;
}

ContextTokens MaskGenerator::classify(std::span<const uint32_t> context) {
    Matcher local = Matcher::at_context(grammar_, context);
    ContextTokens tokens;
    std::vector<uint32_t> accepted;
    const ContextTokens* inner = nullptr;
    if (context.size() == 1) {
        trie_.classify(local, accepted, tokens.uncertain);
    } else {
        inner = &tokens_at(context.first(context.size() - 1));
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
        const ContextTokens* tokens = &tokens_at(context_);
        if (std::find(merged_.begin(), merged_.end(), tokens) != merged_.end()) continue;
        merged_.push_back(tokens);
        if (tokens->dense) {
            mask.allow_all(tokens->accepted_bits);
        } else {
            for (uint32_t id : tokens->accepted_ids) mask.allow(id);
        }
    }
    // Checked after every accepted set is in, so tokens already allowed are skipped.
    for (const ContextTokens* tokens : merged_) trie_.check_tokens(matcher, tokens->uncertain, mask);
}

void prewarm_json_contexts(const TokenTrie& trie) {
    const Grammar grammar = json_object_grammar();
    MaskGenerator generator(grammar, trie);
    TokenMask mask(trie.n_tokens());
    for (std::string_view text : {R"({"key": "text \" \u00e9 é", "n": [0, -12.5e+3, 7], "t": true, "f": false})",
                                  R"({"z": null, "o": {"a": []}, "s": ""})"}) {
        Matcher matcher(grammar);
        for (char c : text) {
            generator.fill_mask(matcher, mask);
            if (!matcher.accept_byte(static_cast<uint8_t>(c))) break;
        }
    }
}

}  // namespace tempered::grammar
