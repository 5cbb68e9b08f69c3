#include "server/structured_output.h"

#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/position_masks.h"
#include "toolcalls/tool_call_grammar.h"

namespace tempered {

grammar::GrammarVocabulary grammar_vocabulary(const Tokenizer& tokenizer, int64_t n_logits) {
    std::vector<std::string> token_bytes(static_cast<size_t>(n_logits));
    std::vector<int32_t> end_of_generation;
    const int64_t known = std::min<int64_t>(n_logits, tokenizer.vocab_size());
    for (int32_t token = 0; token < known; ++token) {
        if (tokenizer.is_end_of_generation(token)) {
            end_of_generation.push_back(token);
            continue;
        }
        token_bytes[static_cast<size_t>(token)] = std::string(tokenizer.token_piece(token, /*skip_special=*/true));
    }
    return grammar::GrammarVocabulary(std::move(token_bytes), std::move(end_of_generation));
}

std::shared_ptr<const grammar::GrammarVocabulary> StructuredOutput::vocabulary() {
    std::call_once(vocabulary_built_, [this] {
        vocabulary_ = std::make_shared<const grammar::GrammarVocabulary>(grammar_vocabulary(tokenizer_, n_logits_));
        // The token sets every JSON grammar meets (string bodies, numbers, separators), classified once
        // here instead of inside the first constrained requests' steps.
        grammar::prewarm_json_contexts(vocabulary_->trie);
    });
    return vocabulary_;
}

namespace {

api::ApiResult<grammar::Grammar> compile_schema(const nlohmann::ordered_json& schema) {
    auto grammar = grammar::compile_json_schema(schema);
    if (!grammar) {
        return api::invalid_request("Invalid 'response_format.json_schema.schema': " + grammar.error().message,
                                    "response_format", "invalid_json_schema");
    }
    return std::move(grammar).value();
}

api::ApiResult<grammar::Grammar> read_grammar(const std::string& text) {
    auto grammar = grammar::read_gbnf(text);
    if (!grammar) {
        return api::invalid_request("Invalid 'structured_outputs.grammar': " + grammar.error().message,
                                    "structured_outputs.grammar", "invalid_grammar");
    }
    return std::move(grammar).value();
}

}  // namespace

api::ApiResult<std::shared_ptr<const grammar::Constraint>> StructuredOutput::constraint_for(
    const api::ResponseFormat& format) {
    using Kind = api::ResponseFormat::Kind;
    if (format.kind == Kind::Text) return std::shared_ptr<const grammar::Constraint>();
    if (format.kind == Kind::JsonObject) {
        std::call_once(json_object_built_, [this] {
            json_object_ = std::make_shared<const grammar::Constraint>(grammar::json_object_grammar(), vocabulary());
        });
        return json_object_;
    }
    // Schemas and grammars share the cache, each under its own prefix.
    const bool is_grammar = format.kind == Kind::Grammar;
    const std::string key = is_grammar ? "gbnf:" + format.grammar : "schema:" + format.schema.dump();
    if (auto known = cached(key)) return known;
    auto grammar = is_grammar ? read_grammar(format.grammar) : compile_schema(format.schema);
    if (!grammar) return grammar.error();
    auto constraint = std::make_shared<const grammar::Constraint>(std::move(grammar).value(), vocabulary());
    const std::lock_guard lock(schema_cache_mutex_);
    schema_cache_.emplace_front(key, constraint);
    if (schema_cache_.size() > kCachedSchemas) schema_cache_.pop_back();
    return std::shared_ptr<const grammar::Constraint>(std::move(constraint));
}

std::shared_ptr<const grammar::Constraint> StructuredOutput::cached(const std::string& schema_text) {
    const std::lock_guard lock(schema_cache_mutex_);
    for (auto it = schema_cache_.begin(); it != schema_cache_.end(); ++it) {
        if (it->first != schema_text) continue;
        schema_cache_.splice(schema_cache_.begin(), schema_cache_, it);  // now the most recently used
        return schema_cache_.front().second;
    }
    return nullptr;
}

// The one token whose text is the family's trigger (the tag its call region opens with), as the grammar
// sees it (a control token the client never sees cannot start a grammar that spells the tag).
std::optional<int32_t> StructuredOutput::opening_tag_token(toolcalls::ToolCallFamily family) {
    const std::string_view tag = toolcalls::describe(family).trigger;
    if (tag.empty()) return std::nullopt;
    const std::optional<int32_t> token = tokenizer_.find_token(tag);
    if (!token || *token < 0 || static_cast<size_t>(*token) >= vocabulary()->n_tokens()) return std::nullopt;
    if (vocabulary()->token_bytes[static_cast<size_t>(*token)] != tag) return std::nullopt;
    return token;
}

api::ApiResult<std::shared_ptr<const grammar::Constraint>> StructuredOutput::tool_call_constraint(
    const ToolCallSetup& setup) {
    using Constrained = std::shared_ptr<const grammar::Constraint>;
    if (setup.validation != ToolCallValidation::Constrain) return Constrained();
    const bool lazy_only = toolcalls::describe(setup.family).lazy_only;
    std::vector<int32_t> trigger;
    if (!setup.forced || lazy_only) {
        const std::optional<int32_t> tag = opening_tag_token(setup.family);
        if (!tag) return Constrained();
        trigger.push_back(*tag);
    }
    // Lazily, the grammar is one call and each trigger starts the next; forced, it holds them all.
    const bool several_calls = setup.forced && setup.parallel_tool_calls;
    auto grammar = toolcalls::build_tool_call_grammar({setup.family, &setup.tools, several_calls});
    if (!grammar) {  // DeclaredTools compiled every schema already, so this is a tool-less named choice
        return api::invalid_request("tools: " + grammar.error().message, "tools", "invalid_value");
    }
    const auto after = (setup.forced || !setup.parallel_tool_calls) && !lazy_only
                           ? grammar::AfterComplete::EndGeneration
                           : grammar::AfterComplete::FreeText;
    return Constrained(std::make_shared<const grammar::Constraint>(std::move(grammar).value(), vocabulary(),
                                                                   std::move(trigger), after));
}

}  // namespace tempered
