// POST /v1/chat/completions: the request body parsed into types and checked for shape, type and
// range. Errors name the offending field ("messages[1].content", "top_logprobs").
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/errors.h"
#include "api/generation_request.h"
#include "api/json_fields.h"

namespace tempered::api {

enum class Role { System, Developer, User, Assistant, Tool };
std::string_view role_name(Role role);

// A tool call the assistant made (in a request's history, or in our response).
struct ToolCall {
    std::string id;
    std::string type = "function";
    std::string name;
    std::string arguments;  // JSON text, as the model wrote it
};

struct ContentPart {
    std::string type;  // only "text" is accepted today
    std::string text;
};

enum class ContentKind {
    None,   // absent or null (an assistant turn with tool_calls)
    Text,   // "content": "..."
    Parts,  // "content": [{"type": "text", "text": "..."}, ...]
};

struct ChatMessage {
    Role role = Role::User;
    ContentKind content_kind = ContentKind::None;
    std::string content;               // Text: the string; Parts: the text parts concatenated
    std::vector<ContentPart> parts;    // Parts only, in order (templates may iterate them)
    std::string name;                  // "" when absent
    std::string tool_call_id;          // role Tool: the call this message answers
    std::vector<ToolCall> tool_calls;  // role Assistant
    // Role Assistant: its reasoning, sent back in the history as `reasoning_content` (vLLM's, DeepSeek's) or
    // `reasoning` (vLLM's newer name); "" when absent. The template reads it under its own name (chat/
    // reasoning_history.h); a template that drops past reasoning (DeepSeek-R1's) does so itself.
    std::string reasoning;
};

// tool_choice, read once: whether the answer may, must or must not call, or which function it calls.
struct ToolChoice {
    enum class Mode { None, Auto, Required, Function };
    Mode mode = Mode::Auto;     // absent: auto (with no tools nothing is read as a call anyway)
    std::string function_name;  // Function: the tool named by {"type":"function","function":{"name"}}
};

enum class ReasoningEffort { Low, Medium, High };
std::string_view reasoning_effort_name(ReasoningEffort effort);  // "low" | "medium" | "high"
std::optional<ReasoningEffort> reasoning_effort_from_name(std::string_view name);

struct ChatRequest {
    GenerationRequest generation;
    std::vector<ChatMessage> messages;
    bool logprobs = false;
    int top_logprobs = 0;  // 0..20, only with logprobs
    // Kept as JSON for the chat template and tool-call parsers; null when absent. Shapes checked.
    Json tools;  // array of {"type":"function","function":{"name",...}}
    // From "none" | "auto" | "required" | {"type":"function","function":{"name"}}; Auto when absent.
    ToolChoice tool_choice;
    bool parallel_tool_calls = true;
    // Extra template variables (e.g. enable_thinking); object or null. They win over the server's own, as
    // in vLLM; `messages`, `chat_template` and `tokenize` are refused.
    Json chat_template_kwargs;
    // The reasoning budget (models whose template thinks in <think>…</think>; ignored by others, as vLLM
    // does): vLLM's thinking_token_budget (tokens, >= 0) wins over reasoning_effort (a budget the
    // operator set per level).
    std::optional<int64_t> thinking_token_budget;
    std::optional<ReasoningEffort> reasoning_effort;
};

inline constexpr int kMaxTopLogprobs = 20;

ApiResult<ChatRequest> parse_chat_request(std::string_view body);
// The same, from a body already parsed (/tokenize with messages reads its own fields beside the chat's).
ApiResult<ChatRequest> parse_chat_request_json(const Json& json);

// Checks that need the served model (token ids against the vocabulary).
FieldError validate_chat_request(const ChatRequest& request, const ModelLimits& limits);

}  // namespace tempered::api
