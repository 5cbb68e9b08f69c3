#include "engine/reasoning_phase.h"

#include <algorithm>

namespace tempered {
namespace {

// Room kept under max_tokens for content after the forced end: one drawn token, with end of generation
// masked for it, so the content is never empty.
constexpr int64_t kMinContentTokens = 1;

// The forced end must close reasoning; a sequence without the closing marker (a tokenizer that split it)
// would never end it, so it falls back to the marker alone.
std::vector<int32_t> closing_sequence(const ReasoningOptions& options) {
    if (!options.enabled()) return {};
    const int32_t end = options.closing_marker();
    const auto& ids = options.forced_end;
    if (std::find(ids.begin(), ids.end(), end) == ids.end()) return {end};
    return ids;
}

std::unique_ptr<reasoning::TokenSplitter> make_splitter(const ReasoningOptions& options) {
    if (options.harmony) return std::make_unique<reasoning::HarmonySplitter>(*options.harmony);
    return std::make_unique<reasoning::ReasoningSplitter>(options.markers.value_or(reasoning::ThinkTokens{}),
                                                          options.prompt_opens_reasoning);
}

}  // namespace

const char* forced_end_name(ForcedEnd reason) {
    switch (reason) {
        case ForcedEnd::Budget: return "budget";
        case ForcedEnd::MaxTokens: return "max_tokens";
        case ForcedEnd::Loop: return "loop";
    }
    return "budget";
}

ReasoningPhase::ReasoningPhase(ReasoningOptions options)
    : options_(std::move(options)),
      splitter_(make_splitter(options_)),
      forced_end_(closing_sequence(options_)),
      reasoned_(options_.prompt_opens_reasoning) {}

void ReasoningPhase::force_end(ForcedEnd reason) {
    if (!in_reasoning() || forcing()) return;
    forced_reason_ = reason;
    forced_position_ = 0;
}

std::optional<ForcedEnd> ReasoningPhase::forced_end_due(int64_t generated, int64_t max_tokens) const {
    if (!in_reasoning() || forcing()) return std::nullopt;
    if (options_.budget && drawn_ >= *options_.budget) return ForcedEnd::Budget;
    if (max_tokens - generated <= static_cast<int64_t>(forced_end_.size()) + kMinContentTokens)
        return ForcedEnd::MaxTokens;
    return std::nullopt;
}

std::optional<int32_t> ReasoningPhase::forced_token(int64_t generated, int64_t max_tokens) {
    if (!forcing()) {
        const std::optional<ForcedEnd> due = forced_end_due(generated, max_tokens);
        if (!due) return std::nullopt;
        force_end(*due);
    }
    return forced_end_[forced_position_];
}

std::span<const int32_t> ReasoningPhase::forced_tokens_ahead(int64_t generated, int64_t max_tokens) const {
    if (forcing()) return std::span<const int32_t>(forced_end_).subspan(forced_position_);
    if (forced_end_due(generated, max_tokens)) return forced_end_;
    return {};
}

bool ReasoningPhase::masks_end_of_generation() const { return in_reasoning() || (reasoned_ && content_drawn_ == 0); }

ReasoningText ReasoningPhase::on_token(int32_t token, bool forced, std::string_view text) {
    const bool was_reasoning = in_reasoning();
    if (forced)
        ++forced_position_;
    else if (was_reasoning && !splitter_->closes_reasoning(token))
        ++drawn_;
    else if (!was_reasoning && reasoned_)
        ++content_drawn_;
    reasoning::SplitText split;
    splitter_->feed(token, text, split);
    if (in_reasoning()) reasoned_ = true;
    return {std::move(split.reasoning), std::move(split.content)};
}

ReasoningText ReasoningPhase::finish(std::string_view tail) {
    reasoning::SplitText split;
    splitter_->finish(tail, split);
    return {std::move(split.reasoning), std::move(split.content)};
}

ReasoningReport ReasoningPhase::report() const {
    ReasoningReport report;
    report.reasoned = reasoned_;
    report.tokens = drawn_;
    report.budget = options_.budget;
    report.forced_end = forced_reason_;
    report.reasoning_tokens = splitter_->reasoning_tokens();
    return report;
}

}  // namespace tempered
