// The chat.completion body and chat.completion.chunk stream of /v1/chat/completions, built from the
// engine's deltas for the generation loop.
#pragma once

#include <memory>
#include <vector>

#include "api/responses.h"
#include "server/chat_tool_calls.h"
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
    // Reads each choice's output for tool calls (see chat_tool_calls.h) instead of passing it as content.
    void read_tool_calls(ToolCallSetup setup, ServingMetrics& metrics);

    std::vector<nlohmann::json> opening_chunks() override;
    std::optional<nlohmann::json> on_delta(const ChoiceDelta& delta) override;
    nlohmann::json usage_chunk(const api::Usage& usage) const override;
    nlohmann::json final_body(const api::Usage& usage) const override;

private:
    std::vector<api::TokenLogprob> api_logprobs(const std::vector<TokenLogprob>& logprobs) const;
    // The delta's text read for tool calls by its choice's reader; the finish reason it then has.
    ToolCallStep read_calls(const ChoiceDelta& delta);
    api::FinishReason finish_reason(const ChoiceDelta& delta) const;
    void fold_whole(const ChoiceDelta& delta);
    std::optional<nlohmann::json> stream_chunk(const ChoiceDelta& delta);

    const Tokenizer& tokenizer_;
    api::ResponseMeta meta_;
    Shape shape_;
    std::vector<api::ChatChoice> choices_;            // whole responses: each choice so far
    std::unique_ptr<ToolCallSetup> tool_call_setup_;  // null: output is content only
    std::vector<ChoiceToolCalls> tool_call_readers_;  // one per choice, with tool_call_setup_
};

}  // namespace tempered
