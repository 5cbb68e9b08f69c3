// The chat.completion body and chat.completion.chunk stream of /v1/chat/completions, built from the
// engine's deltas for the generation loop.
#pragma once

#include <vector>

#include "api/responses.h"
#include "server/generation_loop.h"
#include "tokenizer/tokenizer.h"

namespace tempered {

class ChatResponseBuilder final : public ResponseBuilder {
public:
    struct Shape {
        int choices = 1;
        bool logprobs = false;  // the request asked for token logprobs
        bool stream = false;
        bool include_usage = false;  // streams: "usage": null on every chunk, totals on the last
    };
    ChatResponseBuilder(const Tokenizer& tokenizer, api::ResponseMeta meta, Shape shape);

    std::vector<nlohmann::json> opening_chunks() override;
    std::optional<nlohmann::json> on_delta(const ChoiceDelta& delta) override;
    nlohmann::json usage_chunk(const api::Usage& usage) const override;
    nlohmann::json final_body(const api::Usage& usage) const override;

private:
    std::vector<api::TokenLogprob> api_logprobs(const std::vector<TokenLogprob>& logprobs) const;

    const Tokenizer& tokenizer_;
    api::ResponseMeta meta_;
    Shape shape_;
    std::vector<api::ChatChoice> choices_;  // whole responses: each choice so far
};

}  // namespace tempered
