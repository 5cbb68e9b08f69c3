// Drafts by prompt lookup (vLLM's "ngram" speculation): the sequence's last n tokens (n from max_n down to
// min_n) looked up among its earlier tokens, prompt and output alike; the tokens that followed their most
// recent earlier occurrence are the drafts. Agent traffic repeats its context (tool arguments, JSON, code
// edits, quoted text), so drafts are often right, and verifying k of them costs about one weight read.
//
// One index per sequence, fed each token as it is appended: O(max_n - min_n + 1) per token to keep, the
// same per proposal, whatever the length of the context.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace tempered {

struct NgramOptions {
    int min_n = 2;       // shortest suffix looked up (1 drafts from any repeated token: too eager)
    int max_n = 4;       // longest suffix looked up; the longest match wins
    int max_drafts = 4;  // tokens proposed at most
};

class NgramDrafter {
public:
    explicit NgramDrafter(NgramOptions options = {});

    // Appends tokens to the sequence (the prompt at first, then each accepted output token).
    void append(std::span<const int32_t> tokens);
    void append(int32_t token);

    // Up to options.max_drafts tokens to verify after the sequence as it stands; empty when no suffix of
    // min_n..max_n tokens occurred before.
    std::vector<int32_t> propose() const;

    // Keeps the first `length` tokens (rejected drafts are never appended: this is for a sequence cut back,
    // e.g. by a stop string).
    void truncate(size_t length);

    size_t size() const { return tokens_.size(); }
    const NgramOptions& options() const { return options_; }

private:
    uint64_t hash_of(size_t end, int n) const;  // of tokens_[end - n, end)
    bool same(size_t a_end, size_t b_end, int n) const;

    NgramOptions options_;
    std::vector<int32_t> tokens_;
    // Per n (index n - min_n): the hash of an n-gram -> the position right after its latest occurrence that
    // was followed by a token (the first draft's position).
    std::vector<std::unordered_map<uint64_t, uint32_t>> followers_;
};

}  // namespace tempered
