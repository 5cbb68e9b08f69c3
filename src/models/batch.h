// The tokens of one forward step. Tokens of several sequences go through every matmul together, so each
// weight is read once per step; attention then reads each token's own sequence from the KV cache.
#pragma once

#include <cstdint>
#include <vector>

namespace tempered {

struct BatchToken {
    int32_t token = 0;
    int32_t position = 0;       // index of this token in its sequence
    int32_t sequence = 0;       // KV cache sequence id
    bool wants_logits = false;  // whether forward() writes a row of logits for this token
};

// A token at position p of sequence s attends to positions [0, p] of s: the earlier ones from the KV
// cache, and those in this batch once written. The logits rows come in batch order.
struct Batch {
    std::vector<BatchToken> tokens;

    void add(int32_t token, int32_t position, int32_t sequence, bool wants_logits) {
        tokens.push_back({token, position, sequence, wants_logits});
    }
    void clear() { tokens.clear(); }
    int64_t size() const { return static_cast<int64_t>(tokens.size()); }
    int64_t output_count() const {
        int64_t count = 0;
        for (const auto& t : tokens) count += t.wants_logits ? 1 : 0;
        return count;
    }
};

}  // namespace tempered
