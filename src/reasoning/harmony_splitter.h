// gpt-oss's harmony format, read for reasoning and calls. An answer is a sequence of messages, each a header
// and a body:
//   <|channel|>analysis<|message|>…<|end|>                       reasoning (reasoning_content)
//   <|start|>assistant<|channel|>final<|message|>…               the answer (content; <|return|> ends it)
//   <|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{…}   a tool call (<|call|> ends it)
//   <|channel|>commentary<|message|>…<|end|>                      a preamble to calls: content
// (the chat template's generation prompt has already written "<|start|>assistant"; a recipient may also come
// before the channel: "<|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>").
//
// The split is on the marker tokens' ids (<|start|>, <|channel|>, <|message|>, <|end|>, <|constrain|>: single
// tokens of the o200k_harmony vocabulary, rendered as text, so a model that spells them out of pieces writes
// text); the header between them is read from its text. Headers and markers belong to neither side. A call
// message goes to the content side rewritten in the one form the harmony tool-call family reads (the chat
// template's): "<|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>ARGS<|call|>", its
// closing <|call|> written when the message ends (the model's <|call|> ends generation, so it never arrives).
// Text that never becomes a header (no <|message|> within kMaxHeaderBytes, or the output ends first) was not
// a header: it goes to the content, so nothing a model writes outside the format is lost.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "reasoning/reasoning_parser.h"

namespace tempered::reasoning {

struct HarmonyTokens {
    int32_t start = -1;      // <|start|>
    int32_t channel = -1;    // <|channel|>
    int32_t message = -1;    // <|message|>
    int32_t end = -1;        // <|end|>
    int32_t constrain = -1;  // <|constrain|>

    // Every marker by its text; nullopt unless each is a single token.
    static std::optional<HarmonyTokens> find(const std::function<std::optional<int32_t>(std::string_view)>& token_id);
};

// What a message's header makes of its body.
struct HarmonyHeader {
    enum class Kind { Reasoning, Content, Call } kind = Kind::Content;
    std::string function;  // Call: NAME of to=functions.NAME
};

// The header text between the message's start and <|message|> ("<|channel|>analysis", "assistant to=functions.f
// <|channel|>commentary json", ...), read: analysis is reasoning, a recipient functions.NAME a call, anything
// else (final, a commentary preamble, a channel this server does not know) content.
HarmonyHeader read_harmony_header(std::string_view header);

class HarmonySplitter final : public TokenSplitter {
public:
    static constexpr size_t kMaxHeaderBytes = 256;

    explicit HarmonySplitter(HarmonyTokens tokens) : tokens_(tokens) {}

    void feed(int32_t token, std::string_view text, SplitText& out) override;
    void finish(std::string_view tail, SplitText& out) override;

    bool in_reasoning() const override { return in_body_ && header_.kind == HarmonyHeader::Kind::Reasoning; }
    bool in_answer() const override { return in_body_ && header_.kind == HarmonyHeader::Kind::Content; }
    bool closes_reasoning(int32_t token) const override { return token == tokens_.end; }
    int64_t reasoning_tokens() const override { return reasoning_tokens_; }

private:
    bool is_marker(int32_t token) const;
    void on_marker(int32_t token, SplitText& out);
    void open_body(SplitText& out);
    void close_body(SplitText& out);
    void release_header(SplitText& out);
    std::string& side(SplitText& out) const;

    HarmonyTokens tokens_;
    bool in_body_ = false;
    HarmonyHeader header_;       // the open message's, once its <|message|> came
    std::string header_text_;    // the header so far (before <|message|>)
    int64_t header_tokens_ = 0;  // tokens of the header so far: reasoning tokens if it opens analysis
    int64_t reasoning_tokens_ = 0;
};

}  // namespace tempered::reasoning
