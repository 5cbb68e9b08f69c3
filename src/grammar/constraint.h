// A grammar applied to generation: what a request's choices share (`Constraint`) and what each choice
// keeps (`ConstraintState`).
//
// The engine asks a sequence's state, once per step, which tokens may come next (`fill_mask`), or for
// greedy decoding only whether the token it drew may (`allows`), then advances it with the token it
// committed (`accept`). End-of-generation tokens have no bytes, so the grammar cannot speak about them:
// the state allows them exactly when the sentence is complete, and while the output is free.
//
// A constraint may start lazily (llama.cpp's "lazy grammar"): the output is free until one of the
// trigger tokens is drawn, and from then on the grammar applies, with that token's bytes already fed to
// it (the tool calls of `tool_choice: auto` start at Qwen's `<tool_call>`, which their grammar begins
// with). Once the sentence is complete and nothing can follow, generation either ends or is free again
// until the next trigger.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/position_masks.h"
#include "grammar/shortest_completion.h"
#include "grammar/token_mask.h"

namespace tempered::grammar {

// The model's vocabulary as a grammar sees it: built once per loaded model (the trie over 150k tokens
// takes a while) and shared by every constrained request.
struct GrammarVocabulary {
    // `token_bytes[id]`: what token `id` appends to the output, as the client sees it; empty for control
    // tokens. `end_of_generation`: the tokens that end a choice (they have no bytes).
    GrammarVocabulary(std::vector<std::string> token_bytes, std::vector<int32_t> end_of_generation);

    size_t n_tokens() const { return token_bytes.size(); }
    bool ends_generation(int32_t token) const;

    std::vector<std::string> token_bytes;  // (n_tokens)
    std::vector<int32_t> end_of_generation;
    TokenTrie trie;
};

enum class AfterComplete {
    EndGeneration,  // the choice ends (finish_reason stop) once the sentence is complete
    FreeText,       // the output is free again until the next trigger token
};

class Constraint {
public:
    // `trigger_tokens` empty: the grammar applies from the first generated token.
    Constraint(Grammar grammar, std::shared_ptr<const GrammarVocabulary> vocabulary,
               std::vector<int32_t> trigger_tokens = {}, AfterComplete after_complete = AfterComplete::EndGeneration);
    Constraint(const Constraint&) = delete;  // the mask generator points into this object
    Constraint& operator=(const Constraint&) = delete;

    const Grammar& grammar() const { return grammar_; }
    // The fewest bytes from any position to a complete sentence (closing an answer near its limit).
    const CompletionLengths& lengths() const { return lengths_; }
    const GrammarVocabulary& vocabulary() const { return *vocabulary_; }
    const std::vector<int32_t>& trigger_tokens() const { return trigger_tokens_; }
    AfterComplete after_complete() const { return after_complete_; }
    bool starts_lazily() const { return !trigger_tokens_.empty(); }
    bool is_trigger(int32_t token) const;

    // The tokens whose bytes `matcher` accepts (end-of-generation tokens not included).
    void fill_grammar_mask(Matcher& matcher, TokenMask& mask) const;

private:
    Grammar grammar_;
    CompletionLengths lengths_;  // over grammar_
    std::shared_ptr<const GrammarVocabulary> vocabulary_;
    std::vector<int32_t> trigger_tokens_;
    AfterComplete after_complete_;
    // One generator for all of a request's choices, so what one choice's steps taught it (the contexts it
    // classified) serves the others. It learns as it goes, so calls are serialised; the engine samples
    // its sequences on one thread, so the lock is never contended today.
    mutable std::mutex generator_mutex_;
    mutable MaskGenerator generator_;
};

// One choice's progress through a Constraint: a matcher over the bytes committed since the grammar
// started, and whether it is active (false while the output is free).
class ConstraintState {
public:
    explicit ConstraintState(std::shared_ptr<const Constraint> constraint);

    // The grammar decides the next token (else the output is free and every token is allowed).
    bool active() const { return matcher_.has_value(); }
    // The grammar waits for a trigger token (Constraint::starts_lazily).
    bool lazy() const { return constraint_->starts_lazily(); }
    // The size of the masks fill_mask fills.
    size_t n_tokens() const { return constraint_->vocabulary().n_tokens(); }
    // Active: the tokens allowed next, end-of-generation ones exactly when the sentence is complete.
    // False when no token at all is allowed (a grammar the vocabulary cannot spell).
    bool fill_mask(TokenMask& mask);
    // Whether `token` may come next, without building a mask; the state is unchanged.
    bool allows(int32_t token);
    // Advances over the committed `token`; false (state unchanged) if it was not allowed, which cannot
    // happen when the token was drawn under this state's mask.
    bool accept(int32_t token);
    // The sentence is complete, nothing can follow, and the constraint ends generation there.
    bool must_end() const;

    // Active: the fewest bytes to a complete sentence (0 once complete), and one way there (CompletionLengths).
    uint32_t distance() const;
    std::optional<std::string> completion() const;
    // The same as if `token` came next, the state unchanged; nullopt when the grammar refuses it.
    std::optional<uint32_t> distance_after(int32_t token);
    std::optional<std::string> completion_after(int32_t token);

private:
    bool accept_while_active(int32_t token);
    // The token's bytes; nullptr for an id outside the vocabulary or a token without bytes.
    const std::string* bytes_of(int32_t token) const;

    std::shared_ptr<const Constraint> constraint_;
    std::optional<Matcher> matcher_;  // while active
};

}  // namespace tempered::grammar
