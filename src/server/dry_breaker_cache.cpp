#include "server/dry_breaker_cache.h"

namespace tempered {

DryVocabulary dry_vocabulary(const Tokenizer& tokenizer) {
    DryVocabulary vocabulary;
    // As llama.cpp detokenizes each token alone, special tokens rendered, so the pairs match its own.
    vocabulary.token_texts = [&tokenizer] {
        std::vector<std::string> texts;
        texts.reserve(static_cast<size_t>(tokenizer.vocab_size()));
        for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) texts.push_back(tokenizer.decode({&id, 1}));
        return texts;
    };
    vocabulary.tokenize = [&tokenizer](std::string_view text) { return tokenizer.encode(text, false, false); };
    return vocabulary;
}

std::shared_ptr<const DryBreakers> DryBreakerCache::breakers_for(const std::vector<std::string>& strings) {
    {
        const std::lock_guard lock(mutex_);
        if (auto known = find_locked(strings)) return known;
    }
    // Built outside the lock: a vocabulary scan must not hold up requests whose list is cached.
    auto built = std::make_shared<const DryBreakers>(make_dry_breakers(strings, token_texts(), vocabulary_.tokenize));
    const std::lock_guard lock(mutex_);
    if (auto known = find_locked(strings)) return known;  // another request built it meanwhile
    lists_.emplace_front(strings, std::move(built));
    if (lists_.size() > kCachedLists) lists_.pop_back();
    return lists_.front().second;
}

std::shared_ptr<const DryBreakers> DryBreakerCache::find_locked(const std::vector<std::string>& strings) {
    for (auto it = lists_.begin(); it != lists_.end(); ++it) {
        if (it->first != strings) continue;
        lists_.splice(lists_.begin(), lists_, it);  // now the most recently used
        return lists_.front().second;
    }
    return nullptr;
}

const std::vector<std::string>& DryBreakerCache::token_texts() {
    std::call_once(texts_built_, [this] { token_texts_ = vocabulary_.token_texts(); });
    return token_texts_;
}

}  // namespace tempered
