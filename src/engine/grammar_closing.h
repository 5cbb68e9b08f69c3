// Constrained answers that always close: a sequence under a grammar keeps enough of its token limit
// (max_tokens, and the context) for the shortest way from where it is to a complete sentence. Before a draw,
// when that way needs every token left, its next token is forced instead; after a draw, a token that would
// leave the way longer than the tokens left is replaced by the way's next token. The way is the canonical
// tokenization of one shortest completion (grammar/shortest_completion.h); its length in bytes bounds its length
// in tokens, so the tokenizer runs only near the limit. The choice still ends with finish_reason "length" and
// says it was closed early.
#pragma once

#include <cstdint>
#include <optional>

#include "grammar/constraint.h"
#include "tokenizer/tokenizer.h"

namespace tempered {

class GrammarClosing {
public:
    // The tokenizer outlives this.
    explicit GrammarClosing(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}

    // Before drawing, with `left` tokens left: the token to force now, if the way needs them all.
    std::optional<int32_t> before_draw(grammar::ConstraintState& state, int64_t left) const;
    // After drawing `token`: the token to take instead, if `token` would leave too long a way; kEndHere when
    // the sentence is already complete and `token` would only open what cannot close in time.
    std::optional<int32_t> after_draw(grammar::ConstraintState& state, int32_t token, int64_t left) const;
    static constexpr int32_t kEndHere = -1;

private:
    // Tokens of the way `completion` spells; nullopt when there is none.
    std::optional<std::vector<int32_t>> way(const std::optional<std::string>& completion) const;
    std::optional<int32_t> first_of_way(grammar::ConstraintState& state) const;

    const Tokenizer& tokenizer_;
};

}  // namespace tempered
