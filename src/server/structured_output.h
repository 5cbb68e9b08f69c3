// response_format -> the grammar the engine makes a request's choices follow. The model's vocabulary,
// as the grammar needs it (token bytes and their trie), is built on the first constrained request and
// shared by all of them; so is the grammar of `json_object`, the same for every request. Compiled
// schemas are kept for the next request that sends the same one (clients repeat theirs): its mask
// generator has already learned the token sets of the grammar positions it met, the slow part of a mask.
#pragma once

#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "api/errors.h"
#include "api/response_format.h"
#include "grammar/constraint.h"
#include "tokenizer/tokenizer.h"

namespace tempered {

class StructuredOutput {
public:
    // The tokenizer must outlive this; `n_logits` is the model's vocabulary size (its logits per row).
    StructuredOutput(const Tokenizer& tokenizer, int64_t n_logits) : tokenizer_(tokenizer), n_logits_(n_logits) {}

    // nullptr for free text. A schema the compiler refuses is a 400 naming the keyword and its JSON
    // pointer, with param "response_format". `strict: false` is constrained all the same: an answer that
    // is valid by construction is what either setting asks for.
    api::ApiResult<std::shared_ptr<const grammar::Constraint>> constraint_for(const api::ResponseFormat& format);

    // Built on first use; thread-safe.
    std::shared_ptr<const grammar::GrammarVocabulary> vocabulary();

private:
    const Tokenizer& tokenizer_;
    int64_t n_logits_;
    std::once_flag vocabulary_built_;
    std::shared_ptr<const grammar::GrammarVocabulary> vocabulary_;
    std::once_flag json_object_built_;
    std::shared_ptr<const grammar::Constraint> json_object_;

    using CachedSchema = std::pair<std::string, std::shared_ptr<const grammar::Constraint>>;  // (schema text, ...)
    static constexpr size_t kCachedSchemas = 32;
    std::shared_ptr<const grammar::Constraint> cached(const std::string& schema_text);
    std::mutex schema_cache_mutex_;
    std::list<CachedSchema> schema_cache_;  // most recently used first
};

// What the grammar sees of each token: the bytes the client sees (as the detokenizer renders them),
// empty for control tokens and for those that end generation (so no grammar can spell them).
grammar::GrammarVocabulary grammar_vocabulary(const Tokenizer& tokenizer, int64_t n_logits);

}  // namespace tempered
