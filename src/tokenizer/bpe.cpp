#include "tokenizer/bpe.h"

#include <algorithm>

#include "tokenizer/byte_encoding.h"

namespace tempered {

void BpeMerges::MergeTable::reserve(size_t count) {
    size_t capacity = 16;
    int bits = 4;
    while (capacity < 2 * count) {
        capacity *= 2;
        ++bits;
    }
    keys_.assign(capacity, kEmpty);
    merges_.assign(capacity, Merge{0, 0});
    shift_ = 64 - bits;
    size_ = 0;
}

bool BpeMerges::MergeTable::try_emplace(uint64_t key, Merge merge) {
    if (2 * (size_ + 1) > keys_.size()) {  // keep the load at most one half
        std::vector<uint64_t> old_keys = std::move(keys_);
        std::vector<Merge> old_merges = std::move(merges_);
        reserve(std::max<size_t>(size_ + 1, old_keys.size()));
        for (size_t i = 0; i < old_keys.size(); ++i) {
            if (old_keys[i] != kEmpty) try_emplace(old_keys[i], old_merges[i]);
        }
    }
    const size_t mask = keys_.size() - 1;
    for (size_t slot = slot_of(key);; slot = (slot + 1) & mask) {
        if (keys_[slot] == key) return false;
        if (keys_[slot] == kEmpty) {
            keys_[slot] = key;
            merges_[slot] = merge;
            ++size_;
            return true;
        }
    }
}

const BpeMerges::Merge* BpeMerges::MergeTable::find(uint64_t key) const {
    if (keys_.empty()) return nullptr;
    const size_t mask = keys_.size() - 1;
    for (size_t slot = slot_of(key);; slot = (slot + 1) & mask) {
        if (keys_[slot] == key) return &merges_[slot];
        if (keys_[slot] == kEmpty) return nullptr;
    }
}

int32_t BpeMerges::intern(std::string_view text) {
    const auto it = symbol_ids_.find(text);
    if (it != symbol_ids_.end()) return it->second;
    const auto id = static_cast<int32_t>(symbol_tokens_.size());
    symbol_ids_.emplace(std::string(text), id);
    symbol_tokens_.push_back(-1);
    return id;
}

Result<BpeMerges> BpeMerges::build(const Vocab& vocab, std::span<const std::string> merges) {
    BpeMerges bpe;
    bpe.merges_.reserve(merges.size());
    for (size_t rank = 0; rank < merges.size(); ++rank) {
        const std::string& merge = merges[rank];
        // Split at the first space after the first character, as llama.cpp does.
        const size_t space = merge.find(' ', 1);
        if (space == std::string::npos) continue;  // no pair: can never apply
        const std::string_view left = std::string_view(merge).substr(0, space);
        const std::string_view right = std::string_view(merge).substr(space + 1);
        if (right.empty()) continue;
        const int32_t left_id = bpe.intern(left);
        const int32_t right_id = bpe.intern(right);
        const int32_t result_id = bpe.intern(std::string(left) + std::string(right));
        bpe.merges_.try_emplace(pair_key(left_id, right_id), Merge{static_cast<int32_t>(rank), result_id});
    }
    for (const auto& [text, symbol] : bpe.symbol_ids_) {
        if (const auto token = vocab.find(text)) bpe.symbol_tokens_[symbol] = *token;
    }
    for (int byte = 0; byte < 256; ++byte) {
        const auto it = bpe.symbol_ids_.find(byte_to_gpt2_char(static_cast<uint8_t>(byte)));
        if (it != bpe.symbol_ids_.end()) {
            bpe.byte_symbols_[byte] = it->second;
        } else {
            // A byte that no merge mentions can still be a token of its own.
            bpe.byte_symbols_[byte] = -1;
        }
    }
    return bpe;
}

namespace {

struct Symbol {
    int32_t id;    // interned symbol, -1 if the text is in no merge
    int32_t prev;  // index of the previous live symbol, -1 at the start
    int32_t next;  // index of the next live symbol, -1 at the end
    uint32_t begin;
    uint32_t length;  // bytes of the word; 0 once merged into its left neighbour
};

struct Candidate {
    int32_t rank;
    int32_t left;
    int32_t right;
    uint32_t length;  // left + right length when queued; stale if either changed since
    int32_t result;   // symbol id of the merged text
};

// The lowest rank first; among equal ranks the leftmost pair, as llama.cpp orders them.
struct LaterCandidate {
    bool operator()(const Candidate& a, const Candidate& b) const {
        return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
    }
};

}  // namespace

void BpeMerges::encode_word(std::string_view word, const Vocab& vocab, bool whole_word_first,
                            std::vector<int32_t>& out) const {
    if (word.empty()) return;
    if (whole_word_first) {
        if (const auto token = vocab.find(gpt2_encode_bytes(word))) {
            out.push_back(*token);
            return;
        }
    }

    // Scratch reused across words and calls; encode_word may run on several threads at once.
    thread_local std::vector<Symbol> symbols;
    thread_local std::vector<Candidate> queue;  // a heap ordered by LaterCandidate
    symbols.resize(word.size());
    queue.clear();
    for (size_t i = 0; i < word.size(); ++i) {
        symbols[i] = Symbol{byte_symbols_[static_cast<uint8_t>(word[i])], static_cast<int32_t>(i) - 1,
                            i + 1 < word.size() ? static_cast<int32_t>(i) + 1 : -1, static_cast<uint32_t>(i), 1};
    }
    const auto try_queue = [&](int32_t left, int32_t right) {
        if (left < 0 || right < 0) return;
        const Symbol& a = symbols[left];
        const Symbol& b = symbols[right];
        if (a.id < 0 || b.id < 0) return;
        const Merge* merge = merges_.find(pair_key(a.id, b.id));
        if (merge == nullptr) return;
        queue.push_back(Candidate{merge->rank, left, right, a.length + b.length, merge->result});
        std::push_heap(queue.begin(), queue.end(), LaterCandidate{});
    };
    for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) try_queue(i - 1, i);

    while (!queue.empty()) {
        std::pop_heap(queue.begin(), queue.end(), LaterCandidate{});
        const Candidate candidate = queue.back();
        queue.pop_back();
        Symbol& left = symbols[candidate.left];
        Symbol& right = symbols[candidate.right];
        if (left.length == 0 || right.length == 0 || left.length + right.length != candidate.length) continue;
        left.id = candidate.result;
        left.length += right.length;
        right.length = 0;
        left.next = right.next;
        if (right.next >= 0) symbols[right.next].prev = candidate.left;
        try_queue(left.prev, candidate.left);
        try_queue(candidate.left, left.next);
    }

    for (int32_t i = 0; i >= 0; i = symbols[i].next) {
        const Symbol& symbol = symbols[i];
        const int32_t token = symbol.id >= 0 ? symbol_tokens_[symbol.id] : -1;
        if (token >= 0) {
            out.push_back(token);
            continue;
        }
        const std::string_view bytes = word.substr(symbol.begin, symbol.length);
        if (symbol.id < 0) {
            // A single byte no merge mentions: it may still be a token (llama.cpp looks the text up).
            if (const auto whole = vocab.find(gpt2_encode_bytes(bytes))) {
                out.push_back(*whole);
                continue;
            }
        }
        // Not a token: llama.cpp looks up each byte of the GPT-2 spelling on its own and drops misses.
        for (const char c : gpt2_encode_bytes(bytes)) {
            if (const auto token_of_byte = vocab.find(std::string_view(&c, 1))) out.push_back(*token_of_byte);
        }
    }
}

}  // namespace tempered
