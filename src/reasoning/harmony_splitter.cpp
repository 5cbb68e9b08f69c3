#include "reasoning/harmony_splitter.h"

#include <cctype>

namespace tempered::reasoning {
namespace {

constexpr std::string_view kStart = "<|start|>";
constexpr std::string_view kChannel = "<|channel|>";
constexpr std::string_view kMessage = "<|message|>";
constexpr std::string_view kEnd = "<|end|>";
constexpr std::string_view kConstrain = "<|constrain|>";
constexpr std::string_view kFunctions = "functions.";
// A call as the chat template writes one, the form the harmony tool-call family reads.
constexpr std::string_view kCallOpen = "<|start|>assistant to=functions.";
constexpr std::string_view kCallArguments = "<|channel|>commentary json<|message|>";
constexpr std::string_view kCallClose = "<|call|>";

// The text that arrived with a marker token, less the marker's own text: bytes the detokenizer held back from
// earlier tokens (an unfinished character), which belong where those tokens went.
std::string_view harmony_text_before(std::string_view text, std::string_view marker) {
    if (text.ends_with(marker)) text.remove_suffix(marker.size());
    return text;
}

// The word at `at`: letters, digits, '_', '-' and '.'.
std::string_view word_at(std::string_view text, size_t at) {
    size_t end = at;
    while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_' ||
                                 text[end] == '-' || text[end] == '.'))
        ++end;
    return text.substr(at, end - at);
}

}  // namespace

std::optional<HarmonyTokens> HarmonyTokens::find(
    const std::function<std::optional<int32_t>(std::string_view)>& token_id) {
    HarmonyTokens tokens;
    for (auto [marker, id] :
         {std::pair{kStart, &tokens.start}, std::pair{kChannel, &tokens.channel}, std::pair{kMessage, &tokens.message},
          std::pair{kEnd, &tokens.end}, std::pair{kConstrain, &tokens.constrain}}) {
        const std::optional<int32_t> found = token_id(marker);
        if (!found) return std::nullopt;
        *id = *found;
    }
    return tokens;
}

HarmonyHeader read_harmony_header(std::string_view header) {
    HarmonyHeader read;
    for (size_t to = header.find("to="); to != std::string_view::npos; to = header.find("to=", to + 1)) {
        const std::string_view recipient = word_at(header, to + 3);
        if (recipient.starts_with(kFunctions) && recipient.size() > kFunctions.size()) {
            read.kind = HarmonyHeader::Kind::Call;
            read.function = recipient.substr(kFunctions.size());
            return read;
        }
    }
    const size_t channel = header.find(kChannel);
    if (channel != std::string_view::npos && word_at(header, channel + kChannel.size()) == "analysis")
        read.kind = HarmonyHeader::Kind::Reasoning;
    return read;
}

bool HarmonySplitter::is_marker(int32_t token) const {
    return token == tokens_.start || token == tokens_.channel || token == tokens_.message || token == tokens_.end ||
           token == tokens_.constrain;
}

std::string& HarmonySplitter::side(SplitText& out) const {
    return header_.kind == HarmonyHeader::Kind::Reasoning ? out.reasoning : out.content;
}

void HarmonySplitter::feed(int32_t token, std::string_view text, SplitText& out) {
    if (is_marker(token)) {
        const std::string_view marker = token == tokens_.start     ? kStart
                                        : token == tokens_.channel ? kChannel
                                        : token == tokens_.message ? kMessage
                                        : token == tokens_.end     ? kEnd
                                                                   : kConstrain;
        const std::string_view held = harmony_text_before(text, marker);
        if (in_body_)
            side(out) += held;
        else
            header_text_ += held;
        on_marker(token, out);
        return;
    }
    if (in_body_) {
        if (in_reasoning()) ++reasoning_tokens_;
        side(out) += text;
        return;
    }
    header_text_ += text;
    ++header_tokens_;
    if (header_text_.size() > kMaxHeaderBytes) release_header(out);
}

// <|start|> and <|channel|> open a header (ending a body that lacked its <|end|>), <|constrain|> belongs to
// one, <|message|> ends it, <|end|> ends a body. A marker where it means nothing is dropped.
void HarmonySplitter::on_marker(int32_t token, SplitText& out) {
    if (token == tokens_.message) {
        if (!in_body_) open_body(out);
        return;
    }
    if (token == tokens_.end) {
        if (in_body_) {
            if (in_reasoning()) ++reasoning_tokens_;
            close_body(out);
        } else {
            release_header(out);
        }
        return;
    }
    if (in_body_) close_body(out);
    if (token == tokens_.start) {
        release_header(out);  // text before a message's start was not a header
    } else {
        header_text_ += token == tokens_.channel ? kChannel : kConstrain;
    }
    ++header_tokens_;
}

void HarmonySplitter::open_body(SplitText& out) {
    header_ = read_harmony_header(header_text_);
    if (header_.kind == HarmonyHeader::Kind::Reasoning) reasoning_tokens_ += header_tokens_ + 1;
    if (header_.kind == HarmonyHeader::Kind::Call)
        out.content += std::string(kCallOpen) + header_.function + std::string(kCallArguments);
    in_body_ = true;
    header_text_.clear();
    header_tokens_ = 0;
}

void HarmonySplitter::close_body(SplitText& out) {
    if (header_.kind == HarmonyHeader::Kind::Call) out.content += kCallClose;
    in_body_ = false;
    header_ = {};
}

void HarmonySplitter::release_header(SplitText& out) {
    out.content += header_text_;
    header_text_.clear();
    header_tokens_ = 0;
}

void HarmonySplitter::finish(std::string_view tail, SplitText& out) {
    if (in_body_) {
        side(out) += tail;
        if (header_.kind == HarmonyHeader::Kind::Call) close_body(out);
        return;
    }
    header_text_ += tail;
    release_header(out);
}

}  // namespace tempered::reasoning
