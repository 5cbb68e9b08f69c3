// Builders for the response objects of /v1/chat/completions and /v1/completions, whole and streamed,
// in the shapes of the OpenAI SDK types (openai/types/chat/chat_completion.py,
// chat_completion_chunk.py, chat_completion_token_logprob.py, completion.py, completion_choice.py,
// completion_usage.py).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/chat_request.h"

namespace tempered::api {

enum class FinishReason { Stop, Length, ToolCalls, Repetition };
std::string_view finish_reason_name(FinishReason reason);

// What every response object carries. One ResponseMeta per request: all chunks of a stream share it.
struct ResponseMeta {
    std::string id;       // "chatcmpl-..." or "cmpl-..."
    int64_t created = 0;  // Unix seconds
    std::string model;
    std::string system_fingerprint;  // "" renders as null
};

// A fresh id: prefix + 24 random alphanumerics ("chatcmpl-", "cmpl-").
std::string make_response_id(std::string_view prefix);
ResponseMeta make_chat_meta(std::string model, std::string system_fingerprint);
ResponseMeta make_completion_meta(std::string model, std::string system_fingerprint);

struct Usage {
    int64_t prompt_tokens = 0;
    int64_t completion_tokens = 0;
    int64_t cached_tokens = 0;  // prompt tokens served from the prefix cache
};
nlohmann::json usage_json(const Usage& usage);
// Chat answers of a model that reasons: of the completion tokens, those inside reasoning, as OpenAI's
// usage.completion_tokens_details.reasoning_tokens (added to a usage_json object).
void add_reasoning_tokens(nlohmann::json& usage, int64_t reasoning_tokens);

// --- degeneration (the loop guard) ---

// A loop the server's degeneration guard saw in a choice: rendered as the choice's "degeneration" object
// {"detected_at_token", "period", "repeats", "kind", "phase", "action"}, plus "sampling" (the values a resample
// switched to, each with source "guard" and what it replaced) and "after_resample" (a later loop, only
// flagged) when they apply. Absent from a choice with no loop.
struct LoopSighting {
    int64_t detected_at_token = 0;  // index in the choice's output tokens
    int32_t period = 0;
    int32_t repeats = 0;
    std::string kind = "tokens";  // what repeated: "tokens" | "numbers" | "nesting" (output/loop_channel.h)
};
struct Degeneration {
    LoopSighting loop;
    std::string phase;   // "content" | "reasoning"
    std::string action;  // "flag" | "stop" | "resample"
    std::optional<nlohmann::json> sampling;
    std::optional<LoopSighting> after_resample;
};
nlohmann::json degeneration_json(const Degeneration& degeneration);

// --- logprobs ---

struct TopLogprob {
    std::string token;  // the token's text (may be part of a UTF-8 character)
    double logprob = 0.0;
    std::vector<uint8_t> bytes;  // the token's exact bytes
};

struct TokenLogprob {
    std::string token;
    double logprob = 0.0;
    std::vector<uint8_t> bytes;
    std::vector<TopLogprob> top_logprobs;  // the request's top_logprobs alternatives, best first
};

// Chat: {"content": [{"token","logprob","bytes","top_logprobs":[{"token","logprob","bytes"}]}],
//        "refusal": null}
nlohmann::json chat_logprobs_json(const std::vector<TokenLogprob>& content);

// Completions: parallel arrays, one entry per token. With echo, the first prompt token has no
// logprob (null) and no alternatives (null).
struct CompletionLogprobs {
    std::vector<std::string> tokens;
    std::vector<std::optional<double>> token_logprobs;
    std::vector<std::optional<std::vector<std::pair<std::string, double>>>> top_logprobs;
    std::vector<int64_t> text_offset;  // each token's offset in the choice's text
};
nlohmann::json completion_logprobs_json(const CompletionLogprobs& logprobs);

// --- chat.completion ---

// A call the model wrote that was not returned as a call (under --tool-call-validation flag): an
// undeclared name, arguments the tool's schema refuses, or a second call when parallel_tool_calls is
// false. Rendered in the choice as "tool_call_violations": [{"index", "name", "arguments", "reason"}],
// beside the message (the SDKs keep unknown fields), so nothing the model wrote is lost.
struct ToolCallViolation {
    int index = 0;  // the call's position among all calls the model wrote in this choice
    std::string name;
    std::string arguments;
    std::string reason;
};

// How a choice's reasoning went under its budget: "reasoning_budget": {"tokens", "budget", "forced_end"}
// (tokens drawn inside reasoning; the budget, null when unlimited; "budget" | "max_tokens" | "loop", or
// null when the model ended its reasoning itself).
// [{"index", "name", "arguments", "reason"}]: a choice's (or a response's) tool_call_violations.
nlohmann::json tool_call_violations_json(const std::vector<ToolCallViolation>& violations);

struct ReasoningBudget {
    int64_t tokens = 0;
    std::optional<int64_t> budget;
    std::optional<std::string> forced_end;
};
nlohmann::json reasoning_budget_json(const ReasoningBudget& budget);

struct ChatChoice {
    int index = 0;
    std::optional<std::string> content;  // null when the answer is only tool calls
    // Split off by a reasoning parser; omitted if unset, else also rendered as "reasoning" (vLLM's newer name).
    std::optional<std::string> reasoning_content;
    std::optional<ReasoningBudget> reasoning_budget;  // omitted if unset
    std::vector<ToolCall> tool_calls;
    std::vector<ToolCallViolation> tool_call_violations;  // omitted when empty
    FinishReason finish_reason = FinishReason::Stop;
    // A grammar's answer closed early to fit max_tokens (finish_reason "length"): "closed_early": true.
    bool closed_early = false;
    std::optional<std::vector<TokenLogprob>> logprobs;  // set when the request asked for logprobs
};
nlohmann::json chat_completion_json(const ResponseMeta& meta, const std::vector<ChatChoice>& choices,
                                    const Usage& usage);

// --- chat.completion.chunk ---

// One tool call's part in a stream: the first delta of a call has id, type and name; later ones
// append to arguments. `index` is the call's position in the message's tool_calls.
struct ToolCallDelta {
    int index = 0;
    std::optional<std::string> id;
    std::optional<std::string> name;
    std::optional<std::string> arguments;
};

struct ChatDelta {
    bool include_role = false;  // the first chunk of each choice says "role": "assistant"
    std::optional<std::string> content;
    std::optional<std::string> reasoning_content;  // also rendered as "reasoning"
    std::vector<ToolCallDelta> tool_calls;
};

struct ChatChunkChoice {
    int index = 0;
    ChatDelta delta;
    std::optional<FinishReason> finish_reason;  // set on the choice's last chunk
    bool closed_early = false;                  // on the last chunk, as ChatChoice
    std::optional<std::vector<TokenLogprob>> logprobs;
    std::vector<ToolCallViolation> tool_call_violations;  // found in this chunk's text; omitted when empty
    std::optional<ReasoningBudget> reasoning_budget;      // on the choice's last chunk, when it reasoned
};

// `include_usage_field`: the request set stream_options.include_usage, so every chunk has
// "usage": null and the last one (chat_usage_chunk_json) has the totals.
nlohmann::json chat_chunk_json(const ResponseMeta& meta, const std::vector<ChatChunkChoice>& choices,
                               bool include_usage_field);
nlohmann::json chat_usage_chunk_json(const ResponseMeta& meta, const Usage& usage);

// --- text_completion (whole and streamed: the same object) ---

struct CompletionChoice {
    int index = 0;
    std::string text;
    std::optional<FinishReason> finish_reason;  // null in stream chunks before the last
    bool closed_early = false;                  // as ChatChoice
    std::optional<CompletionLogprobs> logprobs;
    std::optional<std::vector<int32_t>> token_ids;  // return_token_ids: "token_ids" (absent otherwise)
};
nlohmann::json text_completion_json(const ResponseMeta& meta, const std::vector<CompletionChoice>& choices,
                                    const Usage& usage);
nlohmann::json text_completion_chunk_json(const ResponseMeta& meta, const std::vector<CompletionChoice>& choices,
                                          bool include_usage_field);
nlohmann::json text_completion_usage_chunk_json(const ResponseMeta& meta, const Usage& usage);

}  // namespace tempered::api
