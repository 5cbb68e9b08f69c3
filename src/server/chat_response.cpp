#include "server/chat_response.h"

#include "server/endpoint_support.h"

namespace tempered {

ChatResponseBuilder::ChatResponseBuilder(const Tokenizer& tokenizer, api::ResponseMeta meta, Shape shape)
    : tokenizer_(tokenizer), meta_(std::move(meta)), shape_(shape) {
    content_seen_.assign(static_cast<size_t>(shape_.choices), false);
    if (shape_.stream) return;
    choices_.resize(static_cast<size_t>(shape_.choices));
    for (int i = 0; i < shape_.choices; ++i) {
        api::ChatChoice& choice = choices_[static_cast<size_t>(i)];
        choice.index = i;
        choice.content = "";
        if (shape_.logprobs) choice.logprobs.emplace();
    }
}

std::vector<nlohmann::json> ChatResponseBuilder::opening_chunks() {
    // The first chunk of each choice carries the role.
    std::vector<nlohmann::json> chunks;
    for (int choice = 0; choice < shape_.choices; ++choice) {
        api::ChatChunkChoice chunk;
        chunk.index = choice;
        chunk.delta.include_role = true;
        chunk.delta.content = "";
        chunks.push_back(api::chat_chunk_json(meta_, {chunk}, shape_.include_usage));
    }
    return chunks;
}

void ChatResponseBuilder::read_tool_calls(ToolCallSetup setup, ServingMetrics& metrics) {
    tool_call_setup_ = std::make_unique<ToolCallSetup>(std::move(setup));
    tool_call_readers_.clear();
    for (int i = 0; i < shape_.choices; ++i) tool_call_readers_.emplace_back(*tool_call_setup_, metrics);
}

std::vector<nlohmann::json> ChatResponseBuilder::on_delta(const ChoiceDelta& delta) {
    if (!shape_.stream) {
        fold_whole(delta);
        return {};
    }
    std::optional<nlohmann::json> chunk = stream_chunk(delta);
    if (!chunk) return {};
    return {std::move(*chunk)};
}

// The calls the choice's output processor read from the content (never from reasoning), checked.
ToolCallStep ChatResponseBuilder::read_calls(const ChoiceDelta& delta) {
    ToolCallStep step;
    if (!tool_call_setup_)
        step.content = delta.text;
    else
        step = tool_call_readers_.at(static_cast<size_t>(delta.index)).read(delta);
    if (!step.content.empty()) content_seen_.at(static_cast<size_t>(delta.index)) = true;
    if (delta.finish) count_finished(delta);
    return step;
}

std::optional<api::ReasoningBudget> ChatResponseBuilder::finish_reasoning(const ChoiceDelta& delta) {
    if (!delta.reasoning) return std::nullopt;
    const ReasoningReport& report = *delta.reasoning;
    reasoning_tokens_ = reasoning_tokens_.value_or(0) + report.reasoning_tokens;
    if (report.reasoned && answer_metrics_) answer_metrics_->count_reasoning(report);
    return reasoning_budget_of(report);
}

// A chat choice that ended with nothing to show: no content and no calls (the seed's empty answers).
void ChatResponseBuilder::count_finished(const ChoiceDelta& delta) {
    const auto index = static_cast<size_t>(delta.index);
    const bool called = tool_call_setup_ && tool_call_readers_.at(index).returned_calls();
    if (answer_metrics_ && !content_seen_.at(index) && !called) answer_metrics_->count_empty_content();
}

nlohmann::json ChatResponseBuilder::with_reasoning(nlohmann::json body) const {
    if (reasoning_tokens_) api::add_reasoning_tokens(body["usage"], *reasoning_tokens_);
    return body;
}

// A choice that returned calls and stopped by itself ended "with calls"; one cut off by max_tokens did not.
api::FinishReason ChatResponseBuilder::finish_reason(const ChoiceDelta& delta) const {
    const api::FinishReason reason = to_api_finish_reason(*delta.finish);
    const bool called = tool_call_setup_ && tool_call_readers_.at(static_cast<size_t>(delta.index)).returned_calls();
    return reason == api::FinishReason::Stop && called ? api::FinishReason::ToolCalls : reason;
}

void ChatResponseBuilder::fold_whole(const ChoiceDelta& delta) {
    api::ChatChoice& choice = choices_.at(static_cast<size_t>(delta.index));
    ToolCallStep step = read_calls(delta);
    *choice.content += step.content;
    if (!delta.reasoning_text.empty())
        choice.reasoning_content = choice.reasoning_content.value_or("") + delta.reasoning_text;
    for (api::ToolCall& call : step.calls) choice.tool_calls.push_back(std::move(call));
    for (api::ToolCallViolation& violation : step.violations)
        choice.tool_call_violations.push_back(std::move(violation));
    if (delta.finish) {
        // A choice that reasoned shows its reasoning_content, even an empty one.
        choice.reasoning_budget = finish_reasoning(delta);
        if (choice.reasoning_budget && !choice.reasoning_content) choice.reasoning_content = "";
        choice.finish_reason = finish_reason(delta);
        choice.closed_early = delta.closed_early;
        if (choice.content->empty() && !choice.tool_calls.empty()) choice.content.reset();  // only calls: null
    }
    if (shape_.logprobs)
        for (api::TokenLogprob& logprob : api_logprobs(delta.logprobs)) choice.logprobs->push_back(std::move(logprob));
}

std::optional<nlohmann::json> ChatResponseBuilder::stream_chunk(const ChoiceDelta& delta) {
    ToolCallStep step = read_calls(delta);
    const bool thinks = !delta.reasoning_text.empty();
    const bool says_something = !step.content.empty() || !step.calls.empty() || !step.violations.empty() || thinks;
    if (!says_something && !delta.finish && delta.logprobs.empty()) return std::nullopt;
    api::ChatChunkChoice chunk;
    chunk.index = delta.index;
    if (thinks) chunk.delta.reasoning_content = delta.reasoning_text;
    if (delta.finish) chunk.reasoning_budget = finish_reasoning(delta);
    // Without tool calls or reasoning every chunk carries its text, even ""; with them, a chunk may carry
    // only calls or only reasoning.
    if ((!tool_call_setup_ && !thinks) || !step.content.empty()) chunk.delta.content = std::move(step.content);
    for (size_t i = 0; i < step.calls.size(); ++i) {
        // OpenAI's shape: the call's id, type and name first (arguments ""), then its argument text.
        api::ToolCall& call = step.calls[i];
        const int index = step.first_index + static_cast<int>(i);
        chunk.delta.tool_calls.push_back({index, std::move(call.id), std::move(call.name), ""});
        chunk.delta.tool_calls.push_back({index, std::nullopt, std::nullopt, std::move(call.arguments)});
    }
    chunk.tool_call_violations = std::move(step.violations);
    if (delta.finish) chunk.finish_reason = finish_reason(delta);
    chunk.closed_early = delta.closed_early;
    if (shape_.logprobs) chunk.logprobs = api_logprobs(delta.logprobs);
    return api::chat_chunk_json(meta_, {chunk}, shape_.include_usage);
}

nlohmann::json ChatResponseBuilder::usage_chunk(const api::Usage& usage) const {
    return with_reasoning(api::chat_usage_chunk_json(meta_, usage));
}

nlohmann::json ChatResponseBuilder::final_body(const api::Usage& usage) {
    return with_reasoning(api::chat_completion_json(meta_, choices_, usage));
}

std::vector<api::TokenLogprob> ChatResponseBuilder::api_logprobs(const std::vector<TokenLogprob>& logprobs) const {
    auto bytes_of = [this](int32_t token) {
        const std::string& text = tokenizer_.token_bytes(token);
        return std::vector<uint8_t>(text.begin(), text.end());
    };
    std::vector<api::TokenLogprob> out;
    for (const TokenLogprob& logprob : logprobs) {
        api::TokenLogprob& entry = out.emplace_back();
        entry.token = tokenizer_.token_bytes(logprob.token);
        entry.logprob = logprob.logprob;
        entry.bytes = bytes_of(logprob.token);
        for (const auto& [token, value] : logprob.top)
            entry.top_logprobs.push_back({tokenizer_.token_bytes(token), value, bytes_of(token)});
    }
    return out;
}

}  // namespace tempered
