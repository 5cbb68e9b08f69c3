#include "engine/grammar_closing.h"

namespace tempered {

std::optional<std::vector<int32_t>> GrammarClosing::way(const std::optional<std::string>& completion) const {
    if (!completion) return std::nullopt;
    return tokenizer_.encode(*completion, /*add_special_tokens=*/false, /*parse_special=*/true);
}

std::optional<int32_t> GrammarClosing::first_of_way(grammar::ConstraintState& state) const {
    const auto tokens = way(state.completion());
    if (!tokens || tokens->empty() || !state.allows(tokens->front())) return std::nullopt;
    return tokens->front();
}

std::optional<int32_t> GrammarClosing::before_draw(grammar::ConstraintState& state, int64_t left) const {
    if (!state.active()) return std::nullopt;
    const uint32_t bytes = state.distance();
    if (bytes == 0 || bytes == grammar::CompletionLengths::kNever || static_cast<int64_t>(bytes) < left)
        return std::nullopt;
    const auto tokens = way(state.completion());
    if (!tokens || tokens->empty() || static_cast<int64_t>(tokens->size()) < left) return std::nullopt;
    return first_of_way(state);
}

std::optional<int32_t> GrammarClosing::after_draw(grammar::ConstraintState& state, int32_t token, int64_t left) const {
    if (!state.active()) return std::nullopt;
    const std::optional<uint32_t> bytes = state.distance_after(token);
    if (!bytes || *bytes == grammar::CompletionLengths::kNever || static_cast<int64_t>(*bytes) <= left - 1)
        return std::nullopt;
    const auto tokens = way(state.completion_after(token));
    if (tokens && static_cast<int64_t>(tokens->size()) <= left - 1) return std::nullopt;
    if (state.distance() == 0) return kEndHere;
    return first_of_way(state);
}

}  // namespace tempered
