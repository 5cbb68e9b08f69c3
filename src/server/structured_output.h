// response_format -> the grammar the engine makes a request's choices follow. The model's vocabulary,
// as the grammar needs it (token bytes and their trie), is built on the first constrained request and
// shared by all of them; so is the grammar of `json_object`, the same for every request. Compiled
// schemas are kept for the next request that sends the same one (clients repeat theirs): its mask
// generator has already learned the token sets of the grammar positions it met, the slow part of a mask.
#pragma once

#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "api/errors.h"
#include "api/response_format.h"
#include "grammar/constraint.h"
#include "server/chat_tool_calls.h"
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

    // Tool calls under --tool-call-validation constrain. tool_choice "required" or named: the answer is
    // the family's call syntax from its first token (several calls unless parallel_tool_calls is false).
    // "auto": free text until the family's opening tag is drawn as one token (Qwen's `<tool_call>`), then
    // one call, a declared name with valid arguments; then free again, or the end when only one call may
    // be made. nullptr when nothing applies: another validation mode, or auto in a family whose calls
    // open with no tag token (those calls are still checked after the fact, as under `flag`).
    api::ApiResult<std::shared_ptr<const grammar::Constraint>> tool_call_constraint(const ToolCallSetup& setup);

    // Built on first use; thread-safe.
    std::shared_ptr<const grammar::GrammarVocabulary> vocabulary();

private:
    const Tokenizer& tokenizer_;
    int64_t n_logits_;
    std::once_flag vocabulary_built_;
    std::shared_ptr<const grammar::GrammarVocabulary> vocabulary_;
    std::once_flag json_object_built_;
    std::shared_ptr<const grammar::Constraint> json_object_;

    using CachedSchema = std::pair<std::string, std::shared_ptr<const grammar::Constraint>>;  // (cache key, ...)
    static constexpr size_t kCachedSchemas = 32;
    std::shared_ptr<const grammar::Constraint> cached(const std::string& key);
    std::optional<int32_t> opening_tag_token(toolcalls::ToolCallFamily family);
    std::mutex schema_cache_mutex_;
    std::list<CachedSchema> schema_cache_;  // most recently used first
};

// What the grammar sees of each token: the bytes the client sees (as the detokenizer renders them),
// empty for control tokens and for those that end generation (so no grammar can spell them).
grammar::GrammarVocabulary grammar_vocabulary(const Tokenizer& tokenizer, int64_t n_logits);

}  // namespace tempered
