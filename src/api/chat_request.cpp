#include "api/chat_request.h"

#include <limits>

namespace tempered::api {
namespace {

std::optional<Role> parse_role(std::string_view name) {
    if (name == "system") return Role::System;
    if (name == "developer") return Role::Developer;
    if (name == "user") return Role::User;
    if (name == "assistant") return Role::Assistant;
    if (name == "tool") return Role::Tool;
    return std::nullopt;
}

FieldError require_string(const Json& object, std::string_view key, const std::string& param, std::string& out) {
    const Json* field = find_field(object, key);
    if (field == nullptr || field->is_null()) {
        return invalid_request("Missing required parameter: '" + param + "'.", param, "missing_required_parameter");
    }
    if (!field->is_string()) return wrong_type(param, "a string", *field);
    out = field->get<std::string>();
    return std::nullopt;
}

FieldError optional_string(const Json& object, std::string_view key, const std::string& param, std::string& out) {
    RequestedValue<std::string> value;
    if (auto e = read_string(find_field(object, key), param, value)) return e;
    out = value.value_or("");
    return std::nullopt;
}

FieldError parse_content(const Json* field, const std::string& param, ChatMessage& out) {
    if (field == nullptr || field->is_null()) return std::nullopt;
    if (field->is_string()) {
        out.content_kind = ContentKind::Text;
        out.content = field->get<std::string>();
        return std::nullopt;
    }
    if (!field->is_array()) return wrong_type(param, "a string, an array of content parts or null", *field);
    out.content_kind = ContentKind::Parts;
    for (size_t i = 0; i < field->size(); ++i) {
        const Json& part = (*field)[i];
        const std::string part_param = param_path(param, i);
        if (!part.is_object()) return wrong_type(part_param, "an object", part);
        ContentPart content_part;
        if (auto e = require_string(part, "type", param_path(part_param, "type"), content_part.type)) return e;
        if (content_part.type != "text") {
            return invalid_request("Invalid value for '" + param_path(part_param, "type") +
                                       "': only 'text' content "
                                       "parts are supported, but got '" +
                                       content_part.type + "'.",
                                   param_path(part_param, "type"), "invalid_value");
        }
        if (auto e = require_string(part, "text", param_path(part_param, "text"), content_part.text)) return e;
        out.content += content_part.text;
        out.parts.push_back(std::move(content_part));
    }
    return std::nullopt;
}

FieldError parse_tool_calls(const Json* field, const std::string& param, std::vector<ToolCall>& out) {
    if (field == nullptr || field->is_null()) return std::nullopt;
    if (!field->is_array()) return wrong_type(param, "an array", *field);
    for (size_t i = 0; i < field->size(); ++i) {
        const Json& call = (*field)[i];
        const std::string call_param = param_path(param, i);
        if (!call.is_object()) return wrong_type(call_param, "an object", call);
        ToolCall tool_call;
        if (auto e = require_string(call, "id", param_path(call_param, "id"), tool_call.id)) return e;
        if (auto e = optional_string(call, "type", param_path(call_param, "type"), tool_call.type)) return e;
        if (tool_call.type.empty()) tool_call.type = "function";
        const Json* function = find_field(call, "function");
        const std::string function_param = param_path(call_param, "function");
        if (function == nullptr || !function->is_object()) {
            return function == nullptr ? invalid_request("Missing required parameter: '" + function_param + "'.",
                                                         function_param, "missing_required_parameter")
                                       : wrong_type(function_param, "an object", *function);
        }
        if (auto e = require_string(*function, "name", param_path(function_param, "name"), tool_call.name)) return e;
        // Arguments are JSON text; some clients send the object itself. Accept both, keep text.
        const Json* arguments = find_field(*function, "arguments");
        if (arguments != nullptr && arguments->is_string()) {
            tool_call.arguments = arguments->get<std::string>();
        } else if (arguments != nullptr && arguments->is_object()) {
            tool_call.arguments = arguments->dump();
        } else if (arguments != nullptr && !arguments->is_null()) {
            return wrong_type(param_path(function_param, "arguments"), "a string", *arguments);
        }
        out.push_back(std::move(tool_call));
    }
    return std::nullopt;
}

// An assistant message's past reasoning: reasoning_content, or reasoning; both may be sent only alike.
FieldError parse_reasoning(const Json& json, const std::string& param, std::string& out) {
    std::string content, plain;
    if (auto e = optional_string(json, "reasoning_content", param_path(param, "reasoning_content"), content)) return e;
    if (auto e = optional_string(json, "reasoning", param_path(param, "reasoning"), plain)) return e;
    if (!content.empty() && !plain.empty() && content != plain) {
        return invalid_request("'" + param_path(param, "reasoning") + "' and '" +
                                   param_path(param, "reasoning_content") + "' differ; send one of them.",
                               param_path(param, "reasoning"), "invalid_value");
    }
    out = content.empty() ? plain : content;
    return std::nullopt;
}

FieldError parse_message(const Json& json, const std::string& param, ChatMessage& out) {
    if (!json.is_object()) return wrong_type(param, "an object", json);
    std::string role;
    if (auto e = require_string(json, "role", param_path(param, "role"), role)) return e;
    const std::optional<Role> parsed_role = parse_role(role);
    if (!parsed_role) {
        return invalid_request("Invalid value for '" + param_path(param, "role") + "': '" + role +
                                   "'. Supported values are: 'system', 'developer', 'user', 'assistant' and 'tool'.",
                               param_path(param, "role"), "invalid_value");
    }
    out.role = *parsed_role;
    const std::string content_param = param_path(param, "content");
    if (auto e = parse_content(find_field(json, "content"), content_param, out)) return e;
    if (auto e = optional_string(json, "name", param_path(param, "name"), out.name)) return e;

    if (out.role == Role::Assistant) {
        const std::string calls_param = param_path(param, "tool_calls");
        if (auto e = parse_tool_calls(find_field(json, "tool_calls"), calls_param, out.tool_calls)) return e;
        if (out.content_kind == ContentKind::None && out.tool_calls.empty()) {
            return invalid_request("Missing required parameter: '" + content_param +
                                       "' (an assistant message needs content or tool_calls).",
                                   content_param, "missing_required_parameter");
        }
        return parse_reasoning(json, param, out.reasoning);
    }
    if (out.content_kind == ContentKind::None) {
        return invalid_request("Missing required parameter: '" + content_param + "'.", content_param,
                               "missing_required_parameter");
    }
    if (out.role == Role::Tool) {
        return require_string(json, "tool_call_id", param_path(param, "tool_call_id"), out.tool_call_id);
    }
    return std::nullopt;
}

FieldError parse_tools(const Json* field, Json& out) {
    if (field == nullptr || field->is_null()) return std::nullopt;
    if (!field->is_array()) return wrong_type("tools", "an array", *field);
    for (size_t i = 0; i < field->size(); ++i) {
        const Json& tool = (*field)[i];
        const std::string param = param_path("tools", i);
        if (!tool.is_object()) return wrong_type(param, "an object", tool);
        std::string type;
        if (auto e = require_string(tool, "type", param_path(param, "type"), type)) return e;
        if (type != "function") {
            return invalid_request(
                "Invalid value for '" + param_path(param, "type") + "': only 'function' tools are supported.",
                param_path(param, "type"), "invalid_value");
        }
        const Json* function = find_field(tool, "function");
        const std::string function_param = param_path(param, "function");
        if (function == nullptr) {
            return invalid_request("Missing required parameter: '" + function_param + "'.", function_param,
                                   "missing_required_parameter");
        }
        if (!function->is_object()) return wrong_type(function_param, "an object", *function);
        std::string name;
        if (auto e = require_string(*function, "name", param_path(function_param, "name"), name)) return e;
    }
    out = *field;
    return std::nullopt;
}

std::optional<ToolChoice::Mode> tool_choice_mode(std::string_view name) {
    if (name == "none") return ToolChoice::Mode::None;
    if (name == "auto") return ToolChoice::Mode::Auto;
    if (name == "required") return ToolChoice::Mode::Required;
    return std::nullopt;
}

FieldError parse_tool_choice(const Json* field, const Json& tools, ToolChoice& out) {
    if (field == nullptr || field->is_null()) return std::nullopt;
    if ((tools.is_null() || tools.empty()) && !(field->is_string() && field->get<std::string>() == "required")) {
        // As OpenAI: any tool_choice needs tools ("required" keeps its own, more specific message).
        return invalid_request(
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are "
            "specified.",
            "tool_choice", "invalid_value");
    }
    if (field->is_string()) {
        const std::string& choice = field->get_ref<const std::string&>();
        const std::optional<ToolChoice::Mode> mode = tool_choice_mode(choice);
        if (!mode) {
            return invalid_request("Invalid value for 'tool_choice': '" + choice +
                                       "'. Supported values are: 'none', 'auto' and 'required'.",
                                   "tool_choice", "invalid_value");
        }
        if (*mode == ToolChoice::Mode::Required && (tools.is_null() || tools.empty())) {
            return invalid_request("'tool_choice' is 'required' but no 'tools' were given.", "tool_choice",
                                   "invalid_value");
        }
        out = {*mode, ""};
        return std::nullopt;
    }
    if (!field->is_object()) return wrong_type("tool_choice", "a string or an object", *field);
    const Json* function = find_field(*field, "function");
    std::string name;
    if (function == nullptr || !function->is_object()) {
        return invalid_request("Missing required parameter: 'tool_choice.function'.", "tool_choice.function",
                               "missing_required_parameter");
    }
    if (auto e = require_string(*function, "name", "tool_choice.function.name", name)) return e;
    bool known = false;
    if (tools.is_array()) {
        for (const Json& tool : tools) known = known || tool["function"]["name"] == name;
    }
    if (!known) {
        return invalid_request("Invalid value for 'tool_choice': no tool named '" + name + "' is in 'tools'.",
                               "tool_choice.function.name", "invalid_value");
    }
    out = {ToolChoice::Mode::Function, std::move(name)};
    return std::nullopt;
}

FieldError parse_reasoning_budget(const Json& json, ChatRequest& out) {
    RequestedValue<int64_t> budget;
    if (auto e = read_integer(find_field(json, "thinking_token_budget"), "thinking_token_budget", 0,
                              std::numeric_limits<int32_t>::max(), budget))
        return e;
    out.thinking_token_budget = budget.value;
    RequestedValue<std::string> effort;
    if (auto e = read_string(find_field(json, "reasoning_effort"), "reasoning_effort", effort)) return e;
    if (!effort.value) return std::nullopt;
    out.reasoning_effort = reasoning_effort_from_name(*effort.value);
    if (!out.reasoning_effort)
        return invalid_request("Invalid value for 'reasoning_effort': '" + *effort.value +
                                   "'. Supported values are: 'low', 'medium' and 'high'.",
                               "reasoning_effort", "invalid_value");
    return std::nullopt;
}

// vLLM's rules: any key becomes a template variable and wins over the server's own (tools,
// add_generation_prompt, bos_token, ...), except those that are not template variables to set:
// `chat_template` and `tokenize` (vLLM refuses them), and `messages` (transformers refuses a second one).
FieldError parse_chat_template_kwargs(const Json* field, Json& out) {
    if (field == nullptr || field->is_null()) return std::nullopt;
    if (!field->is_object()) return wrong_type("chat_template_kwargs", "an object", *field);
    for (const char* reserved : {"messages", "chat_template", "tokenize"}) {
        if (!field->contains(reserved)) continue;
        const std::string param = param_path("chat_template_kwargs", std::string_view(reserved));
        return invalid_request(
            "Invalid '" + param + "': '" + reserved + "' is not a template variable a request may set.", param,
            "invalid_value");
    }
    out = *field;
    return std::nullopt;
}

}  // namespace

std::string_view reasoning_effort_name(ReasoningEffort effort) {
    switch (effort) {
        case ReasoningEffort::Low: return "low";
        case ReasoningEffort::Medium: return "medium";
        case ReasoningEffort::High: return "high";
    }
    return "medium";
}

std::optional<ReasoningEffort> reasoning_effort_from_name(std::string_view name) {
    for (ReasoningEffort effort : {ReasoningEffort::Low, ReasoningEffort::Medium, ReasoningEffort::High})
        if (reasoning_effort_name(effort) == name) return effort;
    return std::nullopt;
}

std::string_view role_name(Role role) {
    switch (role) {
        case Role::System: return "system";
        case Role::Developer: return "developer";
        case Role::User: return "user";
        case Role::Assistant: return "assistant";
        case Role::Tool: return "tool";
    }
    return "user";
}

ApiResult<ChatRequest> parse_chat_request(std::string_view body) {
    ApiResult<Json> parsed = parse_json_object(body);
    if (!parsed) return parsed.error();
    return parse_chat_request_json(*parsed);
}

ApiResult<ChatRequest> parse_chat_request_json(const Json& json) {
    if (!json.is_object()) return invalid_request("the request body must be a JSON object");
    ChatRequest request;
    if (auto e = parse_generation_fields(json, /*max_tokens_min=*/1, request.generation)) return *e;

    const Json* messages = find_field(json, "messages");
    if (messages == nullptr || messages->is_null()) {
        return invalid_request("Missing required parameter: 'messages'.", "messages", "missing_required_parameter");
    }
    if (!messages->is_array()) return wrong_type("messages", "an array", *messages);
    if (messages->empty()) {
        return invalid_request("Invalid 'messages': empty array. Expected an array with minimum length 1.", "messages",
                               "empty_array");
    }
    for (size_t i = 0; i < messages->size(); ++i) {
        ChatMessage message;
        if (auto e = parse_message((*messages)[i], param_path("messages", i), message)) return *e;
        request.messages.push_back(std::move(message));
    }

    RequestedValue<bool> logprobs;
    if (auto e = read_bool(find_field(json, "logprobs"), "logprobs", logprobs)) return *e;
    request.logprobs = logprobs.value_or(false);
    RequestedValue<int64_t> top_logprobs;
    if (auto e = read_integer(find_field(json, "top_logprobs"), "top_logprobs", 0, kMaxTopLogprobs, top_logprobs)) {
        return *e;
    }
    if (top_logprobs.given() && !request.logprobs) {
        return invalid_request("'top_logprobs' requires 'logprobs' to be true.", "top_logprobs", "invalid_value");
    }
    request.top_logprobs = static_cast<int>(top_logprobs.value_or(0));

    if (auto e = parse_tools(find_field(json, "tools"), request.tools)) return *e;
    if (auto e = parse_tool_choice(find_field(json, "tool_choice"), request.tools, request.tool_choice)) return *e;
    RequestedValue<bool> parallel_tool_calls;
    if (auto e = read_bool(find_field(json, "parallel_tool_calls"), "parallel_tool_calls", parallel_tool_calls)) {
        return *e;
    }
    request.parallel_tool_calls = parallel_tool_calls.value_or(true);

    if (auto e = parse_chat_template_kwargs(find_field(json, "chat_template_kwargs"), request.chat_template_kwargs)) {
        return *e;
    }

    if (auto e = parse_reasoning_budget(json, request)) return *e;
    return request;
}

FieldError validate_chat_request(const ChatRequest& request, const ModelLimits& limits) {
    return validate_generation_fields(request.generation, limits);
}

}  // namespace tempered::api
