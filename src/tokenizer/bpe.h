// Byte-level BPE (GPT-2 style): a word's bytes start as one symbol each (spelled as GPT-2 characters)
// and the adjacent pair with the lowest merge rank is merged until no ranked pair is left. A priority
// queue over a linked list of symbols makes that O(n log n) per word. Symbols are interned strings, so
// a merge is one hash lookup on two integers.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "tokenizer/vocab.h"

namespace tempered {

class BpeMerges {
public:
    // `merges` are "left right" strings in rank order; the first occurrence of a pair keeps its rank.
    static Result<BpeMerges> build(const Vocab& vocab, std::span<const std::string> merges);

    // Appends the token ids of one pre-tokenized word, given as raw bytes. With `whole_word_first`, a
    // word that is itself a token is emitted as that token without merging (llama.cpp's ignore_merges).
    void encode_word(std::string_view word, const Vocab& vocab, bool whole_word_first, std::vector<int32_t>& out) const;

    size_t size() const { return merges_.size(); }

private:
    struct Merge {
        int32_t rank;
        int32_t result;  // symbol id of the merged text
    };
    // Open addressing over (left symbol, right symbol) keys: the merge lookup is the hot loop of
    // encoding, and a flat table keeps it to about one cache miss.
    class MergeTable {
    public:
        void reserve(size_t count);
        bool try_emplace(uint64_t key, Merge merge);  // false if the key is already there
        const Merge* find(uint64_t key) const;
        size_t size() const { return size_; }

    private:
        size_t slot_of(uint64_t key) const { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_); }
        static constexpr uint64_t kEmpty = ~0ull;
        std::vector<uint64_t> keys_;
        std::vector<Merge> merges_;
        int shift_ = 64;
        size_t size_ = 0;
    };
    static uint64_t pair_key(int32_t left, int32_t right) {
        return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
    }
    int32_t intern(std::string_view text);

    TokenIdsByText symbol_ids_;                // GPT-2-spelled text -> symbol id
    std::vector<int32_t> symbol_tokens_;       // (n_symbols) token id of the symbol's text, or -1
    std::array<int32_t, 256> byte_symbols_{};  // symbol of each single byte, or -1
    MergeTable merges_;
};

}  // namespace tempered
