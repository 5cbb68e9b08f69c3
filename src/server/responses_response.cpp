#include "server/responses_response.h"

#include "api/sse.h"
#include "server/endpoint_support.h"
#include "settings/degeneration_report.h"

namespace tempered {
namespace {

nlohmann::json content_part(bool reasoning, const std::string& text) {
    if (reasoning) return {{"type", "reasoning_text"}, {"text", text}};
    return {{"type", "output_text"},
            {"text", text},
            {"annotations", nlohmann::json::array()},
            {"logprobs", nlohmann::json::array()}};
}

nlohmann::json usage_json(const api::Usage& usage, int64_t reasoning_tokens) {
    return {{"input_tokens", usage.prompt_tokens},
            {"input_tokens_details", {{"cached_tokens", usage.cached_tokens}, {"cache_write_tokens", 0}}},
            {"output_tokens", usage.completion_tokens},
            {"output_tokens_details", {{"reasoning_tokens", reasoning_tokens}}},
            {"total_tokens", usage.prompt_tokens + usage.completion_tokens}};
}

}  // namespace

ResponsesBuilder::ResponsesBuilder(nlohmann::json frame, bool stream, nlohmann::json resolved_sampling)
    : frame_(std::move(frame)), stream_(stream), resolved_sampling_(std::move(resolved_sampling)) {}

void ResponsesBuilder::emit(const char* type, nlohmann::json event) {
    event["type"] = type;
    event["sequence_number"] = sequence_++;
    if (stream_) pending_.push_back(std::move(event));
}

std::vector<nlohmann::json> ResponsesBuilder::opening_chunks() {
    emit("response.created", {{"response", response("in_progress", nullptr)}});
    emit("response.in_progress", {{"response", response("in_progress", nullptr)}});
    return std::exchange(pending_, {});
}

void ResponsesBuilder::open(ItemKind kind) {
    if (open_.kind == kind) return;
    close_open("completed");
    const bool reasoning = kind == ItemKind::Reasoning;
    open_ = {kind, static_cast<int>(output_.size()), api::make_response_id(reasoning ? "rs_" : "msg_"), ""};
    nlohmann::json item = reasoning ? nlohmann::json{{"type", "reasoning"}, {"summary", nlohmann::json::array()}}
                                    : nlohmann::json{{"type", "message"}, {"role", "assistant"}};
    item["id"] = open_.id;
    item["status"] = "in_progress";
    item["content"] = nlohmann::json::array();
    emit("response.output_item.added", {{"output_index", open_.output_index}, {"item", std::move(item)}});
    emit("response.content_part.added", {{"item_id", open_.id},
                                         {"output_index", open_.output_index},
                                         {"content_index", 0},
                                         {"part", content_part(reasoning, "")}});
}

void ResponsesBuilder::append(ItemKind kind, const std::string& text) {
    open(kind);
    open_.text += text;
    nlohmann::json event = {
        {"item_id", open_.id}, {"output_index", open_.output_index}, {"content_index", 0}, {"delta", text}};
    if (kind == ItemKind::Message) event["logprobs"] = nlohmann::json::array();
    emit(kind == ItemKind::Message ? "response.output_text.delta" : "response.reasoning_text.delta", std::move(event));
}

void ResponsesBuilder::close_open(const char* status) {
    if (open_.kind == ItemKind::None) return;
    const bool reasoning = open_.kind == ItemKind::Reasoning;
    const nlohmann::json where = {{"item_id", open_.id}, {"output_index", open_.output_index}, {"content_index", 0}};
    nlohmann::json done = where;
    done["text"] = open_.text;
    if (!reasoning) done["logprobs"] = nlohmann::json::array();
    emit(reasoning ? "response.reasoning_text.done" : "response.output_text.done", std::move(done));
    nlohmann::json part_done = where;
    part_done["part"] = content_part(reasoning, open_.text);
    emit("response.content_part.done", std::move(part_done));
    nlohmann::json item = reasoning ? nlohmann::json{{"type", "reasoning"}, {"summary", nlohmann::json::array()}}
                                    : nlohmann::json{{"type", "message"}, {"role", "assistant"}};
    item["id"] = open_.id;
    item["status"] = status;
    item["content"] = nlohmann::json::array({content_part(reasoning, open_.text)});
    emit("response.output_item.done", {{"output_index", open_.output_index}, {"item", item}});
    output_.push_back(std::move(item));
    open_ = {};
}

// A call is whole when it arrives (the output processor hands over complete calls): added, its arguments,
// done, in one go.
void ResponsesBuilder::add_call(const api::ToolCall& call) {
    close_open("completed");
    const int index = static_cast<int>(output_.size());
    nlohmann::json item = {{"type", "function_call"}, {"id", api::make_response_id("fc_")},
                           {"call_id", call.id},      {"name", call.name},
                           {"arguments", ""},         {"status", "in_progress"}};
    const std::string id = item["id"];
    emit("response.output_item.added", {{"output_index", index}, {"item", item}});
    emit("response.function_call_arguments.delta",
         {{"item_id", id}, {"output_index", index}, {"delta", call.arguments}});
    emit("response.function_call_arguments.done",
         {{"item_id", id}, {"output_index", index}, {"arguments", call.arguments}, {"name", call.name}});
    item["arguments"] = call.arguments;
    item["status"] = "completed";
    emit("response.output_item.done", {{"output_index", index}, {"item", item}});
    output_.push_back(std::move(item));
}

std::vector<nlohmann::json> ResponsesBuilder::on_delta(const ChoiceDelta& delta) {
    if (!delta.reasoning_text.empty()) append(ItemKind::Reasoning, delta.reasoning_text);
    ToolCallStep step = tool_calls_.read(delta);
    if (!step.content.empty()) append(ItemKind::Message, step.content);
    said_something_ = said_something_ || !step.content.empty() || !step.calls.empty();
    for (const api::ToolCall& call : step.calls) add_call(call);
    for (api::ToolCallViolation& violation : step.violations) violations_.push_back(std::move(violation));
    if (delta.degeneration)
        extras_["degeneration"] = api::degeneration_json(to_api_degeneration(*delta.degeneration, resolved_sampling_));
    if (delta.finish) finish(delta);
    return std::exchange(pending_, {});
}

void ResponsesBuilder::finish(const ChoiceDelta& delta) {
    finish_ = delta.finish;
    if (delta.closed_early) extras_["closed_early"] = true;
    close_open(*finish_ == FinishReason::Stop ? "completed" : "incomplete");
    if (answer_metrics_ && !said_something_) answer_metrics_->count_empty_content();
    if (!delta.reasoning) return;
    const ReasoningReport& report = *delta.reasoning;
    reasoning_tokens_ += report.reasoning_tokens;
    if (!report.reasoned) return;
    if (answer_metrics_) answer_metrics_->count_reasoning(report);
    extras_["reasoning_budget"] = api::reasoning_budget_json(*reasoning_budget_of(report));
}

nlohmann::json ResponsesBuilder::response(const char* status, const api::Usage* usage) const {
    nlohmann::json body = frame_;
    body["status"] = status;
    body["output"] = usage ? output_ : nlohmann::json::array();
    body["usage"] = usage ? usage_json(*usage, reasoning_tokens_) : nlohmann::json();
    body["incomplete_details"] = nullptr;
    body["error"] = nullptr;
    if (!usage) return body;
    if (finish_ == FinishReason::Length) body["incomplete_details"] = {{"reason", "max_output_tokens"}};
    // The guard stopped a degenerate answer: the SDK's nearest reason; `degeneration` says what happened.
    if (finish_ == FinishReason::Repetition) body["incomplete_details"] = {{"reason", "content_filter"}};
    for (const auto& [key, value] : extras_.items()) body[key] = value;
    if (!violations_.empty()) body["tool_call_violations"] = api::tool_call_violations_json(violations_);
    return body;
}

nlohmann::json ResponsesBuilder::finished_response(const api::Usage& usage) {
    const bool complete = !finish_ || *finish_ == FinishReason::Stop;
    nlohmann::json body = response(complete ? "completed" : "incomplete", &usage);
    if (finished_) finished_(body);
    return body;
}

std::vector<nlohmann::json> ResponsesBuilder::closing_chunks(const api::Usage& usage, bool /*include_usage*/) {
    nlohmann::json body = finished_response(usage);
    const bool complete = body["status"] == "completed";
    emit(complete ? "response.completed" : "response.incomplete", {{"response", std::move(body)}});
    return std::exchange(pending_, {});
}

nlohmann::json ResponsesBuilder::final_body(const api::Usage& usage) { return finished_response(usage); }

std::string ResponsesBuilder::frame(const nlohmann::json& chunk) const {
    return "event: " + chunk.value("type", std::string("message")) + "\n" + api::sse_json(chunk);
}

// OpenAI's error event ({"type": "error", code, message, param}) with the error envelope beside it, which
// the OpenAI SDKs raise as an APIError.
std::string ResponsesBuilder::error_event(const api::ApiError& error) const {
    nlohmann::json event = error.to_json();
    event["type"] = "error";
    event["code"] = error.code.empty() ? nlohmann::json(error.type) : nlohmann::json(error.code);
    event["message"] = error.message;
    event["param"] = error.param.empty() ? nlohmann::json() : nlohmann::json(error.param);
    event["sequence_number"] = sequence_++;
    return frame(event);
}

}  // namespace tempered
