#include "output/loop_channel.h"

#include <algorithm>
#include <utility>

namespace tempered {
namespace {

// The nesting channel's units besides the JSON characters themselves (0..255).
constexpr int32_t kStringContents = 256;
constexpr int32_t kNumber = 257;
// A run of letters outside strings (true, false, null, or prose) is one unit: this plus its first letter.
constexpr int32_t kWord = 512;

bool ascii_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool ascii_digit(unsigned char c) { return c >= '0' && c <= '9'; }
// What may follow a number's first digit and still be the same number (1.5e-3).
bool number_tail(unsigned char c) { return ascii_digit(c) || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'; }
bool ascii_letter(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

}  // namespace

const char* loop_kind_name(LoopKind kind) {
    switch (kind) {
        case LoopKind::Tokens: return "tokens";
        case LoopKind::Numbers: return "numbers";
        case LoopKind::Nesting: return "nesting";
    }
    return "tokens";
}

LoopChannel::LoopChannel(LoopKind kind, const RepetitionDetectionParams& params,
                         std::shared_ptr<const TokenShapes> shapes)
    : kind_(kind), shapes_(std::move(shapes)), detector_(params), min_loop_share_(params.min_loop_share) {
    // Unit n - p's token and depth for every period p <= max_pattern_size.
    const auto ring = static_cast<size_t>(std::max(params.max_pattern_size, 0)) + 1;
    unit_token_.assign(ring, 0);
    unit_depth_.assign(ring, 0);
}

std::optional<LoopSighting> LoopChannel::observe(int32_t token, int64_t index) {
    std::optional<LoopSighting> seen;
    if (kind_ == LoopKind::Tokens) {
        push_unit(token, index, seen);
    } else if (!shapes_) {
        return std::nullopt;
    } else if (kind_ == LoopKind::Numbers) {
        const int32_t number = shapes_->number_unit(token);
        const bool continues = after_number_ && shapes_->continues_number(token);
        after_number_ = number != 0;
        if (!continues) push_unit(number != 0 ? number : token, index, seen);
    } else {
        push_json_bytes(token, index, seen);
    }
    if (seen) candidate_ = seen;
    return follow_candidate(index);
}

std::optional<LoopSighting> LoopChannel::follow_candidate(int64_t index) {
    if (!candidate_ || reported_) return std::nullopt;
    const int32_t repeats = current_repeats();
    if (repeats < candidate_->repeats) {  // broken before it took over: look again
        candidate_.reset();
        detector_.reset();
        return std::nullopt;
    }
    candidate_->repeats = repeats;
    const int64_t recent = std::min(index + 1, kLoopShareWindow);
    const auto covered = static_cast<double>(candidate_->repeats) * candidate_->period;
    if (covered < static_cast<double>(min_loop_share_) * static_cast<double>(recent)) return std::nullopt;
    reported_ = true;
    candidate_->detected_at_token = index;
    return candidate_;
}

void LoopChannel::push_json_bytes(int32_t token, int64_t index, std::optional<LoopSighting>& seen) {
    auto symbol = [&](int32_t unit) {
        last_symbol_ = unit;
        push_unit(unit, index, seen);
    };
    for (const char byte : shapes_->bytes(token)) {
        const auto c = static_cast<unsigned char>(byte);
        if (in_string_) {
            if (escaped_) {
                escaped_ = false;
            } else if (c == '\\') {
                escaped_ = true;
            } else if (c == '"') {
                in_string_ = false;
                symbol('"');
                continue;
            }
            if (last_symbol_ != kStringContents) symbol(kStringContents);
            continue;
        }
        if (ascii_space(c)) {  // indentation grows with the depth; the structure does not
            last_symbol_ = last_symbol_ >= kWord ? -1 : last_symbol_;  // a space ends a word
            continue;
        }
        if (last_symbol_ == kNumber && number_tail(c)) continue;
        if (ascii_letter(c)) {
            if (last_symbol_ < kWord) symbol(kWord + c);
            continue;
        }
        if (ascii_digit(c)) {
            symbol(kNumber);
            continue;
        }
        if (c == '"') in_string_ = true;
        if (c == '{' || c == '[') ++depth_;
        if (c == '}' || c == ']') --depth_;
        symbol(c);
    }
}

void LoopChannel::push_unit(int32_t unit, int64_t index, std::optional<LoopSighting>& seen) {
    const size_t ring = unit_token_.size();
    const size_t slot = static_cast<size_t>(units_ % static_cast<int64_t>(ring));
    unit_token_[slot] = index;
    unit_depth_[slot] = depth_;
    ++units_;
    const std::optional<RepetitionEvent> event = detector_.observe(unit);
    if (!event || seen) return;
    if (kind_ == LoopKind::Nesting && !opens_more_than_it_closes(event->period)) {
        detector_.reset();  // an array of records repeats its shape at one depth: not a loop; look again
        return;
    }
    unit_period_ = event->period;
    const size_t copy_start = static_cast<size_t>((units_ - 1 - event->period) % static_cast<int64_t>(ring));
    seen = LoopSighting{index, static_cast<int32_t>(index - unit_token_[copy_start]), event->repeats, kind_};
}

bool LoopChannel::opens_more_than_it_closes(int32_t period) const {
    const auto ring = static_cast<int64_t>(unit_depth_.size());
    const int32_t now = unit_depth_[static_cast<size_t>((units_ - 1) % ring)];
    const int32_t copy_before = unit_depth_[static_cast<size_t>((units_ - 1 - period) % ring)];
    return now > copy_before;
}

int32_t LoopChannel::current_repeats() const { return detector_.current_repeats(unit_period_); }

void LoopChannel::reset() {
    detector_.reset();
    unit_period_ = 0;
    candidate_.reset();
    reported_ = false;
}

void LoopChannel::start_over() {
    reset();
    after_number_ = false;
    in_string_ = false;
    escaped_ = false;
    last_symbol_ = -1;
    depth_ = 0;
}

}  // namespace tempered
