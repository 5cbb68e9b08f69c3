#include "api/responses.h"

#include <chrono>
#include <random>

namespace tempered::api {
namespace {

// Response bodies: nlohmann::json, whose sorted keys give every response its fixed field order.
using BodyJson = nlohmann::json;

BodyJson string_or_null(const std::string& text) { return text.empty() ? BodyJson(nullptr) : BodyJson(text); }

BodyJson optional_json(const std::optional<std::string>& text) { return text ? BodyJson(*text) : BodyJson(nullptr); }

BodyJson bytes_json(const std::vector<uint8_t>& bytes) {
    BodyJson array = BodyJson::array();
    for (const uint8_t byte : bytes) array.push_back(byte);
    return array;
}

BodyJson envelope(const ResponseMeta& meta, std::string_view object) {
    return {{"id", meta.id},
            {"object", object},
            {"created", meta.created},
            {"model", meta.model},
            {"system_fingerprint", string_or_null(meta.system_fingerprint)}};
}

BodyJson finish_reason_json(const std::optional<FinishReason>& reason) {
    return reason ? BodyJson(finish_reason_name(*reason)) : BodyJson(nullptr);
}

BodyJson tool_call_json(const ToolCall& call) {
    return {{"id", call.id}, {"type", call.type}, {"function", {{"name", call.name}, {"arguments", call.arguments}}}};
}

BodyJson tool_call_delta_json(const ToolCallDelta& delta) {
    BodyJson json = {{"index", delta.index}};
    if (delta.id) {
        json["id"] = *delta.id;
        json["type"] = "function";
    }
    BodyJson function = BodyJson::object();
    if (delta.name) function["name"] = *delta.name;
    if (delta.arguments) function["arguments"] = *delta.arguments;
    if (!function.empty()) json["function"] = std::move(function);
    return json;
}

int64_t unix_seconds_now() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace

std::string_view finish_reason_name(FinishReason reason) {
    switch (reason) {
        case FinishReason::Stop: return "stop";
        case FinishReason::Length: return "length";
        case FinishReason::ToolCalls: return "tool_calls";
        case FinishReason::Repetition: return "repetition";
    }
    return "stop";
}

std::string make_response_id(std::string_view prefix) {
    static constexpr std::string_view kAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    thread_local std::mt19937_64 generator{std::random_device{}()};
    std::uniform_int_distribution<size_t> pick(0, kAlphabet.size() - 1);
    std::string id(prefix);
    for (int i = 0; i < 24; ++i) id += kAlphabet[pick(generator)];
    return id;
}

ResponseMeta make_chat_meta(std::string model, std::string system_fingerprint) {
    return {make_response_id("chatcmpl-"), unix_seconds_now(), std::move(model), std::move(system_fingerprint)};
}

ResponseMeta make_completion_meta(std::string model, std::string system_fingerprint) {
    return {make_response_id("cmpl-"), unix_seconds_now(), std::move(model), std::move(system_fingerprint)};
}

BodyJson usage_json(const Usage& usage) {
    return {{"prompt_tokens", usage.prompt_tokens},
            {"completion_tokens", usage.completion_tokens},
            {"total_tokens", usage.prompt_tokens + usage.completion_tokens},
            {"prompt_tokens_details", {{"cached_tokens", usage.cached_tokens}}}};
}

namespace {

BodyJson loop_sighting_json(const LoopSighting& loop) {
    return {{"detected_at_token", loop.detected_at_token},
            {"period", loop.period},
            {"repeats", loop.repeats},
            {"kind", loop.kind}};
}

}  // namespace

BodyJson degeneration_json(const Degeneration& degeneration) {
    BodyJson json = loop_sighting_json(degeneration.loop);
    json["phase"] = degeneration.phase;
    json["action"] = degeneration.action;
    if (degeneration.sampling) json["sampling"] = *degeneration.sampling;
    if (degeneration.after_resample) json["after_resample"] = loop_sighting_json(*degeneration.after_resample);
    return json;
}

void add_reasoning_tokens(BodyJson& usage, int64_t reasoning_tokens) {
    usage["completion_tokens_details"] = {{"reasoning_tokens", reasoning_tokens}};
}

BodyJson reasoning_budget_json(const ReasoningBudget& budget) {
    return {{"tokens", budget.tokens},
            {"budget", budget.budget ? BodyJson(*budget.budget) : BodyJson(nullptr)},
            {"forced_end", optional_json(budget.forced_end)}};
}

BodyJson chat_logprobs_json(const std::vector<TokenLogprob>& content) {
    BodyJson tokens = BodyJson::array();
    for (const TokenLogprob& token : content) {
        BodyJson top = BodyJson::array();
        for (const TopLogprob& alternative : token.top_logprobs) {
            top.push_back({{"token", alternative.token},
                           {"logprob", alternative.logprob},
                           {"bytes", bytes_json(alternative.bytes)}});
        }
        tokens.push_back({{"token", token.token},
                          {"logprob", token.logprob},
                          {"bytes", bytes_json(token.bytes)},
                          {"top_logprobs", std::move(top)}});
    }
    return {{"content", std::move(tokens)}, {"refusal", nullptr}};
}

BodyJson completion_logprobs_json(const CompletionLogprobs& logprobs) {
    BodyJson token_logprobs = BodyJson::array();
    for (const auto& logprob : logprobs.token_logprobs) {
        token_logprobs.push_back(logprob ? BodyJson(*logprob) : BodyJson(nullptr));
    }
    BodyJson top_logprobs = BodyJson::array();
    for (const auto& alternatives : logprobs.top_logprobs) {
        if (!alternatives) {
            top_logprobs.push_back(nullptr);
            continue;
        }
        BodyJson map = BodyJson::object();
        for (const auto& [token, logprob] : *alternatives) map[token] = logprob;
        top_logprobs.push_back(std::move(map));
    }
    return {{"tokens", logprobs.tokens},
            {"token_logprobs", std::move(token_logprobs)},
            {"top_logprobs", std::move(top_logprobs)},
            {"text_offset", logprobs.text_offset}};
}

BodyJson chat_completion_json(const ResponseMeta& meta, const std::vector<ChatChoice>& choices, const Usage& usage) {
    BodyJson json = envelope(meta, "chat.completion");
    BodyJson array = BodyJson::array();
    for (const ChatChoice& choice : choices) {
        BodyJson message = {{"role", "assistant"}, {"content", optional_json(choice.content)}, {"refusal", nullptr}};
        if (choice.reasoning_content) {
            message["reasoning_content"] = *choice.reasoning_content;
            message["reasoning"] = *choice.reasoning_content;
        }
        if (!choice.tool_calls.empty()) {
            BodyJson calls = BodyJson::array();
            for (const ToolCall& call : choice.tool_calls) calls.push_back(tool_call_json(call));
            message["tool_calls"] = std::move(calls);
        }
        array.push_back({{"index", choice.index},
                         {"message", std::move(message)},
                         {"logprobs", choice.logprobs ? chat_logprobs_json(*choice.logprobs) : BodyJson(nullptr)},
                         {"finish_reason", finish_reason_name(choice.finish_reason)}});
        if (!choice.tool_call_violations.empty())
            array.back()["tool_call_violations"] = tool_call_violations_json(choice.tool_call_violations);
        if (choice.reasoning_budget) array.back()["reasoning_budget"] = reasoning_budget_json(*choice.reasoning_budget);
        if (choice.closed_early) array.back()["closed_early"] = true;
    }
    json["choices"] = std::move(array);
    json["usage"] = usage_json(usage);
    return json;
}

BodyJson chat_chunk_json(const ResponseMeta& meta, const std::vector<ChatChunkChoice>& choices,
                         bool include_usage_field) {
    BodyJson json = envelope(meta, "chat.completion.chunk");
    BodyJson array = BodyJson::array();
    for (const ChatChunkChoice& choice : choices) {
        BodyJson delta = BodyJson::object();
        if (choice.delta.include_role) delta["role"] = "assistant";
        if (choice.delta.content) delta["content"] = *choice.delta.content;
        if (choice.delta.reasoning_content) {
            delta["reasoning_content"] = *choice.delta.reasoning_content;
            delta["reasoning"] = *choice.delta.reasoning_content;
        }
        if (!choice.delta.tool_calls.empty()) {
            BodyJson calls = BodyJson::array();
            for (const ToolCallDelta& call : choice.delta.tool_calls) calls.push_back(tool_call_delta_json(call));
            delta["tool_calls"] = std::move(calls);
        }
        array.push_back({{"index", choice.index},
                         {"delta", std::move(delta)},
                         {"logprobs", choice.logprobs ? chat_logprobs_json(*choice.logprobs) : BodyJson(nullptr)},
                         {"finish_reason", finish_reason_json(choice.finish_reason)}});
        if (!choice.tool_call_violations.empty())
            array.back()["tool_call_violations"] = tool_call_violations_json(choice.tool_call_violations);
        if (choice.reasoning_budget) array.back()["reasoning_budget"] = reasoning_budget_json(*choice.reasoning_budget);
        if (choice.closed_early) array.back()["closed_early"] = true;
    }
    json["choices"] = std::move(array);
    if (include_usage_field) json["usage"] = nullptr;
    return json;
}

BodyJson chat_usage_chunk_json(const ResponseMeta& meta, const Usage& usage) {
    BodyJson json = envelope(meta, "chat.completion.chunk");
    json["choices"] = BodyJson::array();
    json["usage"] = usage_json(usage);
    return json;
}

namespace {

BodyJson completion_choices_json(const std::vector<CompletionChoice>& choices) {
    BodyJson array = BodyJson::array();
    for (const CompletionChoice& choice : choices) {
        array.push_back({{"index", choice.index},
                         {"text", choice.text},
                         {"logprobs", choice.logprobs ? completion_logprobs_json(*choice.logprobs) : BodyJson(nullptr)},
                         {"finish_reason", finish_reason_json(choice.finish_reason)}});
        if (choice.token_ids) array.back()["token_ids"] = *choice.token_ids;
        if (choice.closed_early) array.back()["closed_early"] = true;
    }
    return array;
}

}  // namespace

BodyJson text_completion_json(const ResponseMeta& meta, const std::vector<CompletionChoice>& choices,
                              const Usage& usage) {
    BodyJson json = envelope(meta, "text_completion");
    json["choices"] = completion_choices_json(choices);
    json["usage"] = usage_json(usage);
    return json;
}

BodyJson text_completion_chunk_json(const ResponseMeta& meta, const std::vector<CompletionChoice>& choices,
                                    bool include_usage_field) {
    BodyJson json = envelope(meta, "text_completion");
    json["choices"] = completion_choices_json(choices);
    if (include_usage_field) json["usage"] = nullptr;
    return json;
}

BodyJson text_completion_usage_chunk_json(const ResponseMeta& meta, const Usage& usage) {
    BodyJson json = envelope(meta, "text_completion");
    json["choices"] = BodyJson::array();
    json["usage"] = usage_json(usage);
    return json;
}

nlohmann::json tool_call_violations_json(const std::vector<ToolCallViolation>& violations) {
    nlohmann::json array = nlohmann::json::array();
    for (const ToolCallViolation& violation : violations) {
        array.push_back({{"index", violation.index},
                         {"name", violation.name},
                         {"arguments", violation.arguments},
                         {"reason", violation.reason}});
    }
    return array;
}

}  // namespace tempered::api
