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
    // Counts each finished choice's reasoning and empty answers (tempered:reasoning_tokens,
    // tempered:reasoning_forced_end_total, tempered:empty_content_total).
    void count_answers(ServingMetrics& metrics) { answer_metrics_ = &metrics; }

    std::vector<nlohmann::json> opening_chunks() override;
    std::vector<nlohmann::json> on_delta(const ChoiceDelta& delta) override;
    std::vector<nlohmann::json> closing_chunks(const api::Usage& usage, bool include_usage) override {
        if (!include_usage) return {};
        return {usage_chunk(usage)};
    }
    nlohmann::json final_body(const api::Usage& usage) override;
    nlohmann::json usage_chunk(const api::Usage& usage) const;

private:
    std::vector<api::TokenLogprob> api_logprobs(const std::vector<TokenLogprob>& logprobs) const;
    // The delta's text read for tool calls by its choice's reader; the finish reason it then has.
    ToolCallStep read_calls(const ChoiceDelta& delta);
    api::FinishReason finish_reason(const ChoiceDelta& delta) const;
    void fold_whole(const ChoiceDelta& delta);
    std::optional<nlohmann::json> stream_chunk(const ChoiceDelta& delta);
    // The finishing delta's reasoning report as the response shows it (nullopt: the choice did not reason),
    // counted for usage and metrics.
    std::optional<api::ReasoningBudget> finish_reasoning(const ChoiceDelta& delta);
    void count_finished(const ChoiceDelta& delta);
    // A usage object (whole body's or usage chunk's) with the reasoning tokens, once a report arrived.
    nlohmann::json with_reasoning(nlohmann::json body) const;

    const Tokenizer& tokenizer_;
    api::ResponseMeta meta_;
    Shape shape_;
    std::vector<api::ChatChoice> choices_;            // whole responses: each choice so far
    std::unique_ptr<ToolCallSetup> tool_call_setup_;  // null: output is content only
    std::vector<ChoiceToolCalls> tool_call_readers_;  // one per choice, with tool_call_setup_
    ServingMetrics* answer_metrics_ = nullptr;
    std::vector<bool> content_seen_;           // per choice: some content (not only "") came
    std::optional<int64_t> reasoning_tokens_;  // summed over choices; set once a report arrives
};

}  // namespace tempered
