#include "reasoning/reasoning_parser.h"

#include <utility>

namespace tempered::reasoning {

std::string_view parser_name(ReasoningParserKind kind) {
    switch (kind) {
        case ReasoningParserKind::DeepSeekR1: return "deepseek_r1";
        case ReasoningParserKind::Harmony: return "harmony";
    }
    return "deepseek_r1";
}

std::optional<ReasoningParserKind> parser_from_name(std::string_view name) {
    for (ReasoningParserKind kind : {ReasoningParserKind::DeepSeekR1, ReasoningParserKind::Harmony}) {
        if (parser_name(kind) == name) return kind;
    }
    return std::nullopt;
}

std::optional<ReasoningParserKind> detect_parser(std::string_view chat_template) {
    if (chat_template.find("<|channel|>analysis") != std::string_view::npos) return ReasoningParserKind::Harmony;
    if (chat_template.find("</think>") != std::string_view::npos) return ReasoningParserKind::DeepSeekR1;
    return std::nullopt;
}

std::optional<ThinkTokens> ThinkTokens::find(const std::function<std::optional<int32_t>(std::string_view)>& token_id) {
    const std::optional<int32_t> start = token_id("<think>");
    const std::optional<int32_t> end = token_id("</think>");
    if (!start || !end) return std::nullopt;
    return ThinkTokens{*start, *end};
}

bool prompt_opens_reasoning(const ThinkTokens& markers, const std::vector<int32_t>& prompt_tokens) {
    for (auto token = prompt_tokens.rbegin(); token != prompt_tokens.rend(); ++token) {
        if (*token == markers.start) return true;
        if (*token == markers.end) return false;
    }
    return false;
}

void SplitText::append(const SplitText& other) {
    reasoning += other.reasoning;
    content += other.content;
}

ReasoningSplitter::ReasoningSplitter(ThinkTokens markers, bool prompt_opened_reasoning)
    : markers_(markers), in_reasoning_(prompt_opened_reasoning) {}

namespace {

constexpr std::string_view kThinkStart = "<think>";
constexpr std::string_view kThinkEnd = "</think>";

// The text that arrived with a marker token, less the marker's own text: bytes the detokenizer held back
// from earlier tokens (an unfinished character), which belong to the side those tokens were on.
std::string_view before_marker(std::string_view text, std::string_view marker) {
    if (text.ends_with(marker)) text.remove_suffix(marker.size());
    return text;
}

}  // namespace

// A marker that does not change the side (a <think> inside reasoning, a </think> in the answer) is the
// model writing about the marker, not using it: its text stays on the side it was written on.
void ReasoningSplitter::feed(int32_t token, std::string_view text, SplitText& out) {
    if (!in_reasoning_ && token == markers_.start) {
        out.content += before_marker(text, kThinkStart);
        in_reasoning_ = true;
        ++reasoning_tokens_;
        return;
    }
    if (in_reasoning_ && token == markers_.end) {
        out.reasoning += before_marker(text, kThinkEnd);
        in_reasoning_ = false;
        ++reasoning_tokens_;
        return;
    }
    if (in_reasoning_) {
        ++reasoning_tokens_;
        out.reasoning += text;
    } else {
        out.content += text;
    }
}

void ReasoningSplitter::finish(std::string_view tail, SplitText& out) {
    (in_reasoning_ ? out.reasoning : out.content) += tail;
}

}  // namespace tempered::reasoning
