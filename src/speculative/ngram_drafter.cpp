#include "speculative/ngram_drafter.h"

#include <algorithm>

namespace tempered {

NgramDrafter::NgramDrafter(NgramOptions options) : options_(options) {
    options_.min_n = std::max(1, options_.min_n);
    options_.max_n = std::max(options_.min_n, options_.max_n);
    options_.max_drafts = std::max(0, options_.max_drafts);
    followers_.resize(static_cast<size_t>(options_.max_n - options_.min_n + 1));
}

uint64_t NgramDrafter::hash_of(size_t end, int n) const {
    uint64_t hash = 0xcbf29ce484222325ull;
    for (size_t i = end - static_cast<size_t>(n); i < end; ++i) {
        hash ^= static_cast<uint32_t>(tokens_[i]);
        hash *= 0x100000001b3ull;
    }
    return hash;
}

bool NgramDrafter::same(size_t a_end, size_t b_end, int n) const {
    return std::equal(tokens_.begin() + static_cast<std::ptrdiff_t>(a_end) - n,
                      tokens_.begin() + static_cast<std::ptrdiff_t>(a_end),
                      tokens_.begin() + static_cast<std::ptrdiff_t>(b_end) - n);
}

void NgramDrafter::append(int32_t token) {
    // The n-grams that end just before the new token are now followed by it: remember where.
    const size_t position = tokens_.size();
    for (int n = options_.min_n; n <= options_.max_n; ++n)
        if (position >= static_cast<size_t>(n))
            followers_[static_cast<size_t>(n - options_.min_n)][hash_of(position, n)] = static_cast<uint32_t>(position);
    tokens_.push_back(token);
}

void NgramDrafter::append(std::span<const int32_t> tokens) {
    for (int32_t token : tokens) append(token);
}

std::vector<int32_t> NgramDrafter::propose() const {
    const size_t length = tokens_.size();
    for (int n = options_.max_n; n >= options_.min_n; --n) {
        if (length < static_cast<size_t>(n)) continue;
        const auto& table = followers_[static_cast<size_t>(n - options_.min_n)];
        const auto found = table.find(hash_of(length, n));
        if (found == table.end()) continue;
        const size_t first = found->second;     // tokens_[first - n, first) matched, then tokens_[first]
        if (!same(first, length, n)) continue;  // a hash collision
        const size_t count = std::min(static_cast<size_t>(options_.max_drafts), length - first);
        return {tokens_.begin() + static_cast<std::ptrdiff_t>(first),
                tokens_.begin() + static_cast<std::ptrdiff_t>(first + count)};
    }
    return {};
}

void NgramDrafter::truncate(size_t length) {
    if (length >= tokens_.size()) return;
    std::vector<int32_t> kept(tokens_.begin(), tokens_.begin() + static_cast<std::ptrdiff_t>(length));
    tokens_.clear();
    for (auto& table : followers_) table.clear();
    append(kept);  // rebuilt: rare (a stop string cut), and the index then holds no stale entries
}

}  // namespace tempered
