// The text_completion body and chunks of /v1/completions, built from the engine's deltas for the
// generation loop: each choice's text (after the echoed prompt, when asked) and OpenAI's parallel
// logprob arrays with each token's offset in that text.
#pragma once

#include <string>
#include <vector>

#include "api/responses.h"
#include "server/generation_loop.h"
#include "tokenizer/tokenizer.h"

namespace tempered {

class CompletionResponseBuilder final : public ResponseBuilder {
public:
    struct Shape {
        int choices_per_prompt = 1;  // n; choice i answers prompt i / n
        bool echo = false;           // each choice's text starts with its prompt
        bool logprobs = false;       // the request asked for token logprobs
        bool score_only = false;     // max_tokens 0: nothing is generated, every choice ends at once
        bool stream = false;
        bool include_usage = false;  // streams: "usage": null on every chunk, totals on the last
        bool token_ids = false;      // return_token_ids: each choice's generated token ids too
        bool tokens_as_ids = false;  // return_tokens_as_token_ids: logprobs name tokens "token_id:<id>"
    };
    CompletionResponseBuilder(const Tokenizer& tokenizer, api::ResponseMeta meta,
                              const std::vector<std::string>& prompt_texts, Shape shape);

    std::vector<nlohmann::json> opening_chunks() override;
    std::vector<nlohmann::json> on_delta(const ChoiceDelta& delta) override;
    std::vector<nlohmann::json> closing_chunks(const api::Usage& usage, bool include_usage) override {
        if (!include_usage) return {};
        return {usage_chunk(usage)};
    }
    nlohmann::json final_body(const api::Usage& usage) override;
    nlohmann::json usage_chunk(const api::Usage& usage) const;

private:
    // A choice being assembled: its text so far and, when asked, its logprob arrays.
    struct ChoiceText {
        std::string text;
        std::optional<FinishReason> finish;
        api::CompletionLogprobs logprobs;
        int64_t token_offset = 0;  // where the next token's text starts in `text` (by token bytes)
        std::vector<int32_t> token_ids;
        bool closed_early = false;
    };
    // Appends the delta's tokens to the choice's logprobs; returns the part for a stream chunk.
    api::CompletionLogprobs append_logprobs(ChoiceText& choice, const std::vector<TokenLogprob>& logprobs) const;

    const Tokenizer& tokenizer_;
    api::ResponseMeta meta_;
    Shape shape_;
    std::vector<ChoiceText> choices_;
};

}  // namespace tempered
