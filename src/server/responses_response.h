// The `response` object of /v1/responses and its stream of semantic events, built from the engine's deltas
// for the generation loop, in the shapes of the OpenAI SDK's types (openai/types/responses/response.py,
// response_stream_event.py). One choice: its reasoning becomes a `reasoning` item (reasoning_text content),
// its content a `message` item (output_text), each call a `function_call` item; a stream opens and closes
// each item with its events (output_item.added, content_part.added, the deltas, the done events) and ends
// with response.completed, or response.incomplete when max_output_tokens cut the answer (reason
// "max_output_tokens") or the loop guard stopped it (reason "content_filter", with the `degeneration` object
// that says why). A forced end of reasoning by its budget leaves the answer complete; the response shows it
// in `reasoning_budget`, as a chat choice does.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/chat_tool_calls.h"
#include "server/generation_loop.h"

namespace tempered {

class ResponsesBuilder final : public ResponseBuilder {
public:
    // `frame`: the response object's fields known before generation (id, created_at, model, the echoed
    // request fields); `resolved_sampling`: the generation's sampling report, for the guard's object.
    ResponsesBuilder(nlohmann::json frame, bool stream, nlohmann::json resolved_sampling);
    void read_tool_calls(ToolCallSetup setup, ServingMetrics& metrics) {
        tool_calls_.read_with(std::move(setup), metrics);
    }
    // Counts the finished answer's reasoning and an empty answer, as chat does (chat_response.h).
    void count_answers(ServingMetrics& metrics) { answer_metrics_ = &metrics; }
    // Called with the finished response object (completed or incomplete), for the response store.
    void on_finished(std::function<void(const nlohmann::json& response)> finished) { finished_ = std::move(finished); }

    std::vector<nlohmann::json> opening_chunks() override;
    std::vector<nlohmann::json> on_delta(const ChoiceDelta& delta) override;
    std::vector<nlohmann::json> closing_chunks(const api::Usage& usage, bool include_usage) override;
    nlohmann::json final_body(const api::Usage& usage) override;

    std::string frame(const nlohmann::json& chunk) const override;
    bool ends_with_done() const override { return false; }
    std::string error_event(const api::ApiError& error) const override;
    // The frame carries the sampling report already (every lifecycle event shows the whole response).
    void show_sampling(nlohmann::json& /*chunk_or_body*/, const nlohmann::json& /*sampling*/) const override {}

private:
    enum class ItemKind { None, Reasoning, Message };
    struct OpenItem {
        ItemKind kind = ItemKind::None;
        int output_index = 0;
        std::string id;
        std::string text;
    };

    void emit(const char* type, nlohmann::json event);
    void append(ItemKind kind, const std::string& text);
    void open(ItemKind kind);
    void close_open(const char* status);
    void add_call(const api::ToolCall& call);
    void finish(const ChoiceDelta& delta);
    nlohmann::json response(const char* status, const api::Usage* usage) const;
    nlohmann::json finished_response(const api::Usage& usage);

    nlohmann::json frame_;
    bool stream_;
    nlohmann::json resolved_sampling_;
    OneChoiceToolCalls tool_calls_;
    std::function<void(const nlohmann::json&)> finished_;
    ServingMetrics* answer_metrics_ = nullptr;
    bool said_something_ = false;  // some content or a returned call

    mutable int sequence_ = 0;
    std::vector<nlohmann::json> pending_;  // events of the delta being read
    OpenItem open_;
    nlohmann::json output_ = nlohmann::json::array();  // the items closed so far
    std::optional<FinishReason> finish_;
    nlohmann::json extras_ = nlohmann::json::object();  // degeneration, reasoning_budget
    std::vector<api::ToolCallViolation> violations_;
    int64_t reasoning_tokens_ = 0;
};

}  // namespace tempered
