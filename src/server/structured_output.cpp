#include "server/structured_output.h"

#include "grammar/json_schema.h"

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
    });
    return vocabulary_;
}

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
    const std::string schema_text = format.schema.dump();
    if (auto known = cached(schema_text)) return known;
    auto grammar = grammar::compile_json_schema(format.schema);
    if (!grammar) {
        return api::invalid_request("Invalid 'response_format.json_schema.schema': " + grammar.error().message,
                                    "response_format", "invalid_json_schema");
    }
    auto constraint = std::make_shared<const grammar::Constraint>(std::move(grammar).value(), vocabulary());
    const std::lock_guard lock(schema_cache_mutex_);
    schema_cache_.emplace_front(schema_text, constraint);
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

}  // namespace tempered
