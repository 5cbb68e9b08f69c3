// Reasoning in model output: which part of a chat answer is the model thinking (`reasoning_content`) and
// which is the answer (`content`), for templates that think in <think>…</think> (DeepSeek-R1 and its
// distills, Qwen3, QwQ), or in harmony's analysis channel (gpt-oss, reasoning/harmony_splitter.h).
//
// The split is on token ids, never on text: the think markers are single tokens of the vocabulary, so a
// `</think>` the model spells out of ordinary pieces (or quotes inside its answer) is text, not a boundary,
// and no text is ever held back waiting to see whether it completes a marker. The marker tokens themselves
// belong to neither side.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tempered::reasoning {

enum class ReasoningParserKind {
    DeepSeekR1,  // <think>…</think>; the prompt may already have opened <think> (R1's revised template)
    Harmony,     // gpt-oss: messages <|channel|>analysis<|message|>…<|end|> are reasoning, final's are the answer
};

// "deepseek_r1", "harmony": the names --reasoning-parser takes
std::string_view parser_name(ReasoningParserKind kind);
std::optional<ReasoningParserKind> parser_from_name(std::string_view name);
// The parser a chat template calls for: one that writes harmony's analysis channel is harmony; one that
// mentions </think> (every thinking template strips the reasoning from earlier assistant turns by it; R1's first
// template never writes <think> itself) thinks in <think>…</think>. nullopt when the template shows no sign of
// reasoning.
std::optional<ReasoningParserKind> detect_parser(std::string_view chat_template);

// The ids of the think markers in a model's vocabulary.
struct ThinkTokens {
    int32_t start = -1;  // <think>
    int32_t end = -1;    // </think>

    // Both markers looked up by their text ("<think>", "</think>"); nullopt unless both are single tokens.
    static std::optional<ThinkTokens> find(const std::function<std::optional<int32_t>(std::string_view)>& token_id);
};

// Whether the prompt left the model inside reasoning: its last think marker is an open one. R1's revised
// template ends the generation prompt with "<｜Assistant｜><think>\n"; Qwen3 with enable_thinking=false ends
// it with an empty "<think>\n\n</think>\n\n", which is closed.
bool prompt_opens_reasoning(const ThinkTokens& markers, const std::vector<int32_t>& prompt_tokens);

// What a stretch of output turned out to be.
struct SplitText {
    std::string reasoning;
    std::string content;

    void append(const SplitText& other);
};

// One choice's output, fed token by token. Each token's text delta is what the detokenizer emitted when
// that token arrived (it may be empty while a multi-byte character is incomplete, and may carry bytes of
// earlier tokens): text goes to the side the model was on when its token arrived.
class TokenSplitter {
public:
    virtual ~TokenSplitter() = default;

    // Adds to `out` the text of `token`, on its side; a marker switches sides, its own text on neither.
    virtual void feed(int32_t token, std::string_view text, SplitText& out) = 0;
    // The output has ended; `tail` is what the detokenizer still held (bytes of an unfinished character).
    virtual void finish(std::string_view tail, SplitText& out) = 0;

    // Inside reasoning now; after finish(), whether the output ended there (reasoning never closed).
    virtual bool in_reasoning() const = 0;
    // Inside the answer proper, where a grammar may constrain what comes (not between harmony's messages).
    virtual bool in_answer() const { return !in_reasoning(); }
    // Whether `token` is the marker that ends reasoning (drawn, but not a reasoning token of the budget's).
    virtual bool closes_reasoning(int32_t token) const = 0;
    // Tokens generated inside reasoning, the markers that open and close it included (as OpenAI's
    // reasoning_tokens counts every token the answer did not show).
    virtual int64_t reasoning_tokens() const = 0;
};

// The <think>…</think> split.
class ReasoningSplitter final : public TokenSplitter {
public:
    ReasoningSplitter(ThinkTokens markers, bool prompt_opened_reasoning);

    void feed(int32_t token, std::string_view text, SplitText& out) override;
    // The splitter holds nothing back itself, so a stream that ends inside reasoning (a budget spent, a
    // model that never closes </think>) has given all its reasoning once the tail is added to that side.
    void finish(std::string_view tail, SplitText& out) override;

    bool in_reasoning() const override { return in_reasoning_; }
    bool closes_reasoning(int32_t token) const override { return token == markers_.end; }
    int64_t reasoning_tokens() const override { return reasoning_tokens_; }

private:
    ThinkTokens markers_;
    bool in_reasoning_;
    int64_t reasoning_tokens_ = 0;
};

}  // namespace tempered::reasoning
