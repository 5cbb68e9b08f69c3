#include "grammar/constraint.h"

#include <algorithm>

namespace tempered::grammar {

GrammarVocabulary::GrammarVocabulary(std::vector<std::string> bytes, std::vector<int32_t> end_tokens)
    : token_bytes(std::move(bytes)), end_of_generation(std::move(end_tokens)), trie(token_bytes) {}

bool GrammarVocabulary::ends_generation(int32_t token) const {
    return std::find(end_of_generation.begin(), end_of_generation.end(), token) != end_of_generation.end();
}

Constraint::Constraint(Grammar grammar, std::shared_ptr<const GrammarVocabulary> vocabulary,
                       std::vector<int32_t> trigger_tokens, AfterComplete after_complete)
    : grammar_(std::move(grammar)),
      lengths_(grammar_),
      vocabulary_(std::move(vocabulary)),
      trigger_tokens_(std::move(trigger_tokens)),
      after_complete_(after_complete),
      generator_(grammar_, vocabulary_->trie) {}

bool Constraint::is_trigger(int32_t token) const {
    return std::find(trigger_tokens_.begin(), trigger_tokens_.end(), token) != trigger_tokens_.end();
}

void Constraint::fill_grammar_mask(Matcher& matcher, TokenMask& mask) const {
    const std::lock_guard lock(generator_mutex_);
    generator_.fill_mask(matcher, mask);
}

ConstraintState::ConstraintState(std::shared_ptr<const Constraint> constraint) : constraint_(std::move(constraint)) {
    if (!constraint_->starts_lazily()) matcher_.emplace(constraint_->grammar());
}

bool ConstraintState::fill_mask(TokenMask& mask) {
    constraint_->fill_grammar_mask(*matcher_, mask);
    if (matcher_->is_complete())
        for (int32_t token : constraint_->vocabulary().end_of_generation) mask.allow(static_cast<uint32_t>(token));
    return mask.count() > 0;
}

bool ConstraintState::allows(int32_t token) {
    if (!active()) return true;
    if (constraint_->vocabulary().ends_generation(token)) return matcher_->is_complete();
    const std::string* bytes = bytes_of(token);
    if (bytes == nullptr) return false;
    const Matcher::Checkpoint before = matcher_->checkpoint();
    const bool accepted = matcher_->accept_bytes(*bytes);
    matcher_->rollback(before);
    return accepted;
}

uint32_t ConstraintState::distance() const { return active() ? constraint_->lengths().distance(*matcher_) : 0; }

std::optional<std::string> ConstraintState::completion() const {
    if (!active()) return std::string();
    return constraint_->lengths().completion(*matcher_);
}

std::optional<uint32_t> ConstraintState::distance_after(int32_t token) {
    if (!active() || constraint_->vocabulary().ends_generation(token)) return distance();
    const std::string* bytes = bytes_of(token);
    const Matcher::Checkpoint before = matcher_->checkpoint();
    if (bytes == nullptr || !matcher_->accept_bytes(*bytes)) return std::nullopt;
    const uint32_t after = constraint_->lengths().distance(*matcher_);
    matcher_->rollback(before);
    return after;
}

std::optional<std::string> ConstraintState::completion_after(int32_t token) {
    if (!active() || constraint_->vocabulary().ends_generation(token)) return completion();
    const std::string* bytes = bytes_of(token);
    const Matcher::Checkpoint before = matcher_->checkpoint();
    if (bytes == nullptr || !matcher_->accept_bytes(*bytes)) return std::nullopt;
    std::optional<std::string> after = constraint_->lengths().completion(*matcher_);
    matcher_->rollback(before);
    return after;
}

bool ConstraintState::accept(int32_t token) {
    if (active()) return accept_while_active(token);
    if (!constraint_->is_trigger(token)) return true;  // free text
    matcher_.emplace(constraint_->grammar());
    if (accept_while_active(token)) return true;
    matcher_.reset();  // a grammar that does not begin with its trigger's text: refused, the state as it was
    return false;
}

bool ConstraintState::accept_while_active(int32_t token) {
    if (constraint_->vocabulary().ends_generation(token)) return matcher_->is_complete();
    const std::string* bytes = bytes_of(token);
    if (bytes == nullptr || !matcher_->accept_bytes(*bytes)) return false;
    // The rollback history only serves mask building within a step; without this it grows per byte.
    matcher_->drop_history();
    const bool finished = matcher_->is_complete() && !matcher_->can_continue();
    if (finished && constraint_->after_complete() == AfterComplete::FreeText) matcher_.reset();
    return true;
}

const std::string* ConstraintState::bytes_of(int32_t token) const {
    const GrammarVocabulary& vocabulary = constraint_->vocabulary();
    if (token < 0 || static_cast<size_t>(token) >= vocabulary.n_tokens()) return nullptr;
    const std::string& bytes = vocabulary.token_bytes[static_cast<size_t>(token)];
    return bytes.empty() ? nullptr : &bytes;
}

bool ConstraintState::must_end() const {
    return active() && constraint_->after_complete() == AfterComplete::EndGeneration && matcher_->is_complete() &&
           !matcher_->can_continue();
}

}  // namespace tempered::grammar
