#include "server/messages_response.h"

#include "api/sse.h"
#include "server/endpoint_support.h"
#include "settings/degeneration_report.h"

namespace tempered {

MessagesBuilder::MessagesBuilder(nlohmann::json frame, bool stream, int64_t prompt_tokens,
                                 nlohmann::json resolved_sampling)
    : frame_(std::move(frame)),
      stream_(stream),
      prompt_tokens_(prompt_tokens),
      resolved_sampling_(std::move(resolved_sampling)) {}

std::vector<nlohmann::json> MessagesBuilder::opening_chunks() {
    nlohmann::json message = frame_;
    message["content"] = nlohmann::json::array();
    message["stop_reason"] = nullptr;
    message["stop_sequence"] = nullptr;
    message["usage"] = usage_json({prompt_tokens_, 0, 0});
    return {{{"type", "message_start"}, {"message", std::move(message)}}};
}

void MessagesBuilder::append(BlockKind kind, const std::string& text) {
    const bool thinking = kind == BlockKind::Thinking;
    const char* field = thinking ? "thinking" : "text";
    if (open_ != kind) {
        close_block();
        open_ = kind;
        nlohmann::json block = {{"type", field}, {field, ""}};
        if (thinking) block["signature"] = "";
        content_.push_back(block);
        if (stream_)
            pending_.push_back(
                {{"type", "content_block_start"}, {"index", content_.size() - 1}, {"content_block", block}});
    }
    nlohmann::json& block = content_.back();
    block[field] = block[field].get<std::string>() + text;
    if (stream_)
        pending_.push_back({{"type", "content_block_delta"},
                            {"index", content_.size() - 1},
                            {"delta", {{"type", thinking ? "thinking_delta" : "text_delta"}, {field, text}}}});
}

void MessagesBuilder::close_block() {
    if (open_ == BlockKind::None) return;
    if (stream_) pending_.push_back({{"type", "content_block_stop"}, {"index", content_.size() - 1}});
    open_ = BlockKind::None;
}

// The call's arguments as the `input` object; text that is not an object (possible only with
// --tool-call-validation off) goes as {} with the text beside it, so nothing the model wrote is lost.
void MessagesBuilder::add_call(const api::ToolCall& call) {
    close_block();
    called_ = true;
    nlohmann::json input = nlohmann::json::parse(call.arguments, nullptr, false);
    nlohmann::json block = {
        {"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", nlohmann::json::object()}};
    const size_t index = content_.size();
    if (stream_) {
        pending_.push_back({{"type", "content_block_start"}, {"index", index}, {"content_block", block}});
        pending_.push_back({{"type", "content_block_delta"},
                            {"index", index},
                            {"delta", {{"type", "input_json_delta"}, {"partial_json", call.arguments}}}});
        pending_.push_back({{"type", "content_block_stop"}, {"index", index}});
    }
    if (input.is_object())
        block["input"] = std::move(input);
    else
        block["raw_input"] = call.arguments;
    content_.push_back(std::move(block));
}

std::vector<nlohmann::json> MessagesBuilder::on_delta(const ChoiceDelta& delta) {
    if (!delta.reasoning_text.empty()) append(BlockKind::Thinking, delta.reasoning_text);
    ToolCallStep step = tool_calls_.read(delta);
    if (!step.content.empty()) append(BlockKind::Text, step.content);
    for (const api::ToolCall& call : step.calls) add_call(call);
    for (api::ToolCallViolation& violation : step.violations) violations_.push_back(std::move(violation));
    if (delta.degeneration)
        extras_["degeneration"] = api::degeneration_json(to_api_degeneration(*delta.degeneration, resolved_sampling_));
    if (delta.finish) finish(delta);
    return std::exchange(pending_, {});
}

void MessagesBuilder::finish(const ChoiceDelta& delta) {
    close_block();
    finish_ = delta.finish;
    stop_sequence_ = delta.stop_string;
    if (delta.closed_early) extras_["closed_early"] = true;
    const bool said_something = called_ || std::any_of(content_.begin(), content_.end(),
                                                       [](const nlohmann::json& b) { return b["type"] != "thinking"; });
    if (answer_metrics_ && !said_something) answer_metrics_->count_empty_content();
    if (!delta.reasoning) return;
    const ReasoningReport& report = *delta.reasoning;
    if (!report.reasoned) return;
    if (answer_metrics_) answer_metrics_->count_reasoning(report);
    extras_["reasoning_budget"] = api::reasoning_budget_json(*reasoning_budget_of(report));
}

std::string MessagesBuilder::stop_reason() const {
    if (finish_ == FinishReason::Length) return "max_tokens";
    if (stop_sequence_) return "stop_sequence";
    if (finish_ == FinishReason::Stop && called_) return "tool_use";
    return "end_turn";  // a guard stop too: `degeneration` says so
}

nlohmann::json MessagesBuilder::usage_json(const api::Usage& usage) const {
    return {{"input_tokens", usage.prompt_tokens - usage.cached_tokens},
            {"output_tokens", usage.completion_tokens},
            {"cache_creation_input_tokens", 0},
            {"cache_read_input_tokens", usage.cached_tokens}};
}

std::vector<nlohmann::json> MessagesBuilder::closing_chunks(const api::Usage& usage, bool /*include_usage*/) {
    nlohmann::json delta = {{"type", "message_delta"},
                            {"delta", {{"stop_reason", stop_reason()}, {"stop_sequence", nullptr}}},
                            {"usage", usage_json(usage)}};
    if (stop_sequence_) delta["delta"]["stop_sequence"] = *stop_sequence_;
    for (const auto& [key, value] : extras_.items()) delta[key] = value;
    if (!violations_.empty()) delta["tool_call_violations"] = api::tool_call_violations_json(violations_);
    return {std::move(delta), {{"type", "message_stop"}}};
}

nlohmann::json MessagesBuilder::final_body(const api::Usage& usage) {
    nlohmann::json body = frame_;
    body["content"] = content_;
    body["stop_reason"] = stop_reason();
    body["stop_sequence"] = stop_sequence_ ? nlohmann::json(*stop_sequence_) : nlohmann::json();
    body["usage"] = usage_json(usage);
    for (const auto& [key, value] : extras_.items()) body[key] = value;
    if (!violations_.empty()) body["tool_call_violations"] = api::tool_call_violations_json(violations_);
    return body;
}

std::string MessagesBuilder::frame(const nlohmann::json& chunk) const {
    return "event: " + chunk.value("type", std::string("message")) + "\n" + api::sse_json(chunk);
}

std::string MessagesBuilder::error_event(const api::ApiError& error) const {
    return frame(api::anthropic_error_json(error));
}

}  // namespace tempered
