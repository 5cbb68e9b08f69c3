// DRY's sequence breakers as tokens, built once per list and shared. Building them scans the whole
// vocabulary (dry_breakers.h), too slow to do per request; clients send the same few lists (most send
// none and get the default), so the server keeps the lists it has built, a bounded number of them.
#pragma once

#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "sampling/dry_breakers.h"
#include "tokenizer/tokenizer.h"

namespace tempered {

// What building breakers needs of the model's vocabulary: each token's text on its own (asked once, on
// the first list) and the tokenizer's encoding of plain text.
struct DryVocabulary {
    std::function<std::vector<std::string>()> token_texts;
    DryTokenize tokenize;
};

// The served model's vocabulary; `tokenizer` must outlive what this returns.
DryVocabulary dry_vocabulary(const Tokenizer& tokenizer);

class DryBreakerCache {
public:
    static constexpr size_t kCachedLists = 16;

    explicit DryBreakerCache(DryVocabulary vocabulary) : vocabulary_(std::move(vocabulary)) {}

    // The breakers for `strings`, the same pointer for the same list while it stays cached (the least
    // recently used list is dropped beyond kCachedLists). Thread-safe; two requests that miss the same
    // list at once may both build it, and both get the one that was kept.
    std::shared_ptr<const DryBreakers> breakers_for(const std::vector<std::string>& strings);

private:
    using Entry = std::pair<std::vector<std::string>, std::shared_ptr<const DryBreakers>>;

    std::shared_ptr<const DryBreakers> find_locked(const std::vector<std::string>& strings);
    const std::vector<std::string>& token_texts();

    DryVocabulary vocabulary_;
    std::once_flag texts_built_;
    std::vector<std::string> token_texts_;  // (vocab)
    std::mutex mutex_;
    std::list<Entry> lists_;  // most recently used first
};

}  // namespace tempered
