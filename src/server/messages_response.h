// The `message` object of /v1/messages and its stream of Anthropic events, built from the engine's deltas for
// the generation loop, in the shapes of the Anthropic SDK's types (anthropic/types/message.py,
// raw_message_stream_event.py). One choice: reasoning is a `thinking` block (signature ""), content a `text`
// block, each call a `tool_use` block (its arguments parsed into `input`); a stream sends message_start,
// each block's content_block_start / _delta (thinking_delta, text_delta, input_json_delta) / _stop,
// message_delta with the stop_reason and the output tokens, and message_stop. stop_reason: end_turn,
// max_tokens, tool_use (it stopped after calls), stop_sequence (with the string that matched). A stop by the
// loop guard is end_turn with the `degeneration` object beside it, and a forced end of reasoning shows in
// `reasoning_budget`: extra fields, never a stop_reason the SDK cannot parse. usage follows Anthropic:
// input_tokens are the prompt tokens not read from the prefix cache, cache_read_input_tokens the others.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/chat_tool_calls.h"
#include "server/generation_loop.h"

namespace tempered {

class MessagesBuilder final : public ResponseBuilder {
public:
    // `frame`: id, model and the fields known before generation; `prompt_tokens` for message_start.
    MessagesBuilder(nlohmann::json frame, bool stream, int64_t prompt_tokens, nlohmann::json resolved_sampling);
    void read_tool_calls(ToolCallSetup setup, ServingMetrics& metrics) {
        tool_calls_.read_with(std::move(setup), metrics);
    }
    void count_answers(ServingMetrics& metrics) { answer_metrics_ = &metrics; }

    std::vector<nlohmann::json> opening_chunks() override;
    std::vector<nlohmann::json> on_delta(const ChoiceDelta& delta) override;
    std::vector<nlohmann::json> closing_chunks(const api::Usage& usage, bool include_usage) override;
    nlohmann::json final_body(const api::Usage& usage) override;

    std::string frame(const nlohmann::json& chunk) const override;
    bool ends_with_done() const override { return false; }
    std::string error_event(const api::ApiError& error) const override;
    void show_sampling(nlohmann::json& chunk_or_body, const nlohmann::json& sampling) const override {
        (chunk_or_body.contains("message") ? chunk_or_body["message"] : chunk_or_body)["sampling"] = sampling;
    }
    http::HttpResponse error_response(const api::ApiError& error) const override {
        return api::to_http_response(error, api::ErrorEnvelope::Anthropic);
    }

private:
    enum class BlockKind { None, Thinking, Text };

    void append(BlockKind kind, const std::string& text);
    void close_block();
    void add_call(const api::ToolCall& call);
    void finish(const ChoiceDelta& delta);
    std::string stop_reason() const;
    nlohmann::json usage_json(const api::Usage& usage) const;

    nlohmann::json frame_;
    bool stream_;
    int64_t prompt_tokens_;
    nlohmann::json resolved_sampling_;
    OneChoiceToolCalls tool_calls_;
    ServingMetrics* answer_metrics_ = nullptr;

    std::vector<nlohmann::json> pending_;               // events of the delta being read
    nlohmann::json content_ = nlohmann::json::array();  // the blocks so far (the open one last)
    BlockKind open_ = BlockKind::None;
    bool called_ = false;
    std::optional<FinishReason> finish_;
    std::optional<std::string> stop_sequence_;
    nlohmann::json extras_ = nlohmann::json::object();  // degeneration, reasoning_budget, tool_call_violations
    std::vector<api::ToolCallViolation> violations_;
};

}  // namespace tempered
