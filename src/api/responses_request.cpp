#include "api/responses_request.h"

#include <algorithm>
#include <array>
#include <set>
#include <string_view>

namespace tempered::api {
namespace {

// The Responses API's own fields, read here rather than passed on as they came.
constexpr std::array<std::string_view, 30> kResponsesFields = {"model",
                                                               "input",
                                                               "instructions",
                                                               "tools",
                                                               "tool_choice",
                                                               "text",
                                                               "reasoning",
                                                               "max_output_tokens",
                                                               "include",
                                                               "store",
                                                               "stream",
                                                               "previous_response_id",
                                                               "metadata",
                                                               "truncation",
                                                               "parallel_tool_calls",
                                                               "temperature",
                                                               "top_p",
                                                               "user",
                                                               "background",
                                                               "conversation",
                                                               "prompt",
                                                               "prompt_cache_key",
                                                               "safety_identifier",
                                                               "service_tier",
                                                               "max_tool_calls",
                                                               "stream_options",
                                                               "top_logprobs",
                                                               "prompt_cache_retention",
                                                               "context_management",
                                                               "client_metadata"};
// Chat fields that would say something else here (the conversation, the format, the count of answers).
constexpr std::array<std::string_view, 9> kChatOnlyFields = {"messages",  "response_format", "n",
                                                             "logprobs",  "max_tokens",      "max_completion_tokens",
                                                             "functions", "function_call",   "reasoning_effort"};

template <size_t N>
bool listed(const std::array<std::string_view, N>& names, std::string_view key) {
    return std::find(names.begin(), names.end(), key) != names.end();
}

ApiError unsupported(const std::string& param, const std::string& what) {
    return invalid_request("'" + param + "' " + what + " is not supported by this server.", param,
                           "unsupported_parameter");
}

FieldError check_string(const Json& object, std::string_view key, const std::string& param, bool required) {
    const Json* field = find_field(object, key);
    if (field == nullptr || field->is_null()) {
        if (!required) return std::nullopt;
        return invalid_request("Missing required parameter: '" + param + "'.", param, "missing_required_parameter");
    }
    if (!field->is_string()) return wrong_type(param, "a string", *field);
    return std::nullopt;
}

// `object[key]` as a string, `fallback` when absent or null; another type is an error naming `param`.
ApiResult<std::string> string_or(const Json& object, std::string_view key, const std::string& param,
                                 std::string fallback) {
    if (auto e = check_string(object, key, param, false)) return *e;
    const Json* field = find_field(object, key);
    return field && field->is_string() ? field->get<std::string>() : fallback;
}

// A string input is one user message; an item without `type` but with `role` is a message (the SDK's
// EasyInputMessage).
ApiResult<Json> input_items(const Json& body) {
    const Json* input = find_field(body, "input");
    if (input == nullptr || input->is_null())
        return invalid_request("Missing required parameter: 'input'.", "input", "missing_required_parameter");
    if (input->is_string()) return Json::array({Json{{"type", "message"}, {"role", "user"}, {"content", *input}}});
    if (!input->is_array()) return wrong_type("input", "a string or an array", *input);
    Json items = Json::array();
    for (size_t i = 0; i < input->size(); ++i) {
        Json item = (*input)[i];
        const std::string param = param_path("input", i);
        if (!item.is_object()) return wrong_type(param, "an object", item);
        if (!item.contains("type") && item.contains("role")) item["type"] = "message";
        if (auto e = check_string(item, "type", param_path(param, "type"), true)) return *e;
        items.push_back(std::move(item));
    }
    return items;
}

// Function tools are checked for a name; other types are named in a warning and left out.
FieldError check_tools(const Json& body, std::vector<std::string>& warnings) {
    const Json* tools = find_field(body, "tools");
    if (tools == nullptr || tools->is_null()) return std::nullopt;
    if (!tools->is_array()) return wrong_type("tools", "an array", *tools);
    for (size_t i = 0; i < tools->size(); ++i) {
        const Json& tool = (*tools)[i];
        const std::string param = param_path("tools", i);
        if (!tool.is_object()) return wrong_type(param, "an object", tool);
        if (auto e = check_string(tool, "type", param_path(param, "type"), true)) return e;
        const std::string type = tool["type"].get<std::string>();
        if (type == "function") {
            if (auto e = check_string(tool, "name", param_path(param, "name"), true)) return e;
            continue;
        }
        warnings.push_back(param + " (type '" + type +
                           "') was left out: this server runs no hosted tools, so the model does not see it");
    }
    return std::nullopt;
}

FieldError check_options(const Json& body) {
    if (const Json* background = find_field(body, "background");
        background && background->is_boolean() && background->get<bool>())
        return unsupported("background", "true");
    for (const char* key : {"conversation", "prompt"})
        if (const Json* field = find_field(body, key); field && !field->is_null())
            return unsupported(key, "(use previous_response_id for a conversation)");
    if (auto e = check_string(body, "instructions", "instructions", false)) return e;
    if (auto e = check_string(body, "previous_response_id", "previous_response_id", false)) return e;
    if (const Json* include = find_field(body, "include"); include && !include->is_null()) {
        if (!include->is_array()) return wrong_type("include", "an array", *include);
        for (size_t i = 0; i < include->size(); ++i) {
            const Json& entry = (*include)[i];
            if (!entry.is_string()) return wrong_type(param_path("include", i), "a string", entry);
            if (entry == "message.output_text.logprobs")
                return unsupported(param_path("include", i), "message.output_text.logprobs (use chat completions)");
        }
    }
    if (const Json* text = find_field(body, "text"); text && !text->is_null() && !text->is_object())
        return wrong_type("text", "an object", *text);
    if (const Json* reasoning = find_field(body, "reasoning"); reasoning && !reasoning->is_null()) {
        if (!reasoning->is_object()) return wrong_type("reasoning", "an object", *reasoning);
        if (auto e = check_string(*reasoning, "effort", "reasoning.effort", false)) return e;
    }
    return std::nullopt;
}

FieldError read_flag(const Json& body, const char* key, bool& out) {
    const Json* field = find_field(body, key);
    if (field == nullptr || field->is_null()) return std::nullopt;
    if (!field->is_boolean()) return wrong_type(key, "a boolean", *field);
    out = field->get<bool>();
    return std::nullopt;
}

// --- items -> chat messages ---

// A message's text: a string, or its text parts joined (input_text, output_text, text; a refusal's text).
ApiResult<std::string> item_text(const Json& content, const std::string& param) {
    if (content.is_string()) return content.get<std::string>();
    if (content.is_null()) return std::string();
    if (!content.is_array()) return wrong_type(param, "a string or an array", content);
    std::string text;
    for (size_t i = 0; i < content.size(); ++i) {
        const Json& part = content[i];
        const std::string part_param = param_path(param, i);
        if (!part.is_object()) return wrong_type(part_param, "an object", part);
        auto type_or = string_or(part, "type", param_path(part_param, "type"), "");
        if (!type_or) return type_or.error();
        const std::string& type = *type_or;
        const char* key = type == "refusal" ? "refusal" : "text";
        if (type != "input_text" && type != "output_text" && type != "text" && type != "refusal")
            return invalid_request("Invalid value for '" + param_path(part_param, "type") + "': '" + type +
                                       "' content is not supported (text only).",
                                   param_path(part_param, "type"), "invalid_value");
        if (auto e = check_string(part, key, param_path(part_param, key), true)) return *e;
        text += part[key].get<std::string>();
    }
    return text;
}

// A reasoning item's text: its reasoning_text content, else its summary.
std::string reasoning_text(const Json& item) {
    std::string text;
    for (const char* key : {"content", "summary"}) {
        if (const Json* parts = find_field(item, key); parts && parts->is_array())
            for (const Json& part : *parts)
                if (part.is_object() && part.contains("text") && part["text"].is_string())
                    text += part["text"].get<std::string>();
        if (!text.empty()) break;
    }
    return text;
}

class MessageWriter {
public:
    explicit MessageWriter(Json& messages) : messages_(messages) {}

    FieldError add(const Json& item, const std::string& param) {
        const std::string type = item["type"].get<std::string>();
        if (type == "message") return message(item, param);
        if (type == "function_call") return function_call(item, param);
        if (type == "function_call_output") return function_call_output(item, param);
        if (type == "reasoning") {
            pending_reasoning_ += reasoning_text(item);
            return std::nullopt;
        }
        return invalid_request("Invalid value for '" + param_path(param, "type") + "': '" + type +
                                   "' input items are not supported (message, function_call, "
                                   "function_call_output, reasoning).",
                               param_path(param, "type"), "invalid_value");
    }

private:
    FieldError message(const Json& item, const std::string& param) {
        if (auto e = check_string(item, "role", param_path(param, "role"), true)) return e;
        const std::string role = item["role"].get<std::string>();
        if (role != "user" && role != "assistant" && role != "system" && role != "developer")
            return invalid_request("Invalid value for '" + param_path(param, "role") + "': '" + role + "'.",
                                   param_path(param, "role"), "invalid_value");
        const Json* content = find_field(item, "content");
        auto text = item_text(content ? *content : Json(), param_path(param, "content"));
        if (!text) return text.error();
        Json message = {{"role", role}, {"content", *text}};
        if (role == "assistant") take_reasoning(message);
        messages_.push_back(std::move(message));
        return std::nullopt;
    }

    // Calls join the assistant message before them (one turn: reasoning, text, calls), else open one.
    FieldError function_call(const Json& item, const std::string& param) {
        for (const char* key : {"call_id", "name", "arguments"})
            if (auto e = check_string(item, key, param_path(param, key), true)) return e;
        const std::string call_id = item["call_id"].get<std::string>();
        Json call = {{"id", call_id},
                     {"type", "function"},
                     {"function", {{"name", item["name"]}, {"arguments", item["arguments"]}}}};
        call_ids_.insert(call_id);
        if (messages_.empty() || messages_.back()["role"] != "assistant") {
            Json message = {{"role", "assistant"}, {"content", nullptr}};
            take_reasoning(message);
            messages_.push_back(std::move(message));
        }
        messages_.back()["tool_calls"].push_back(std::move(call));
        return std::nullopt;
    }

    FieldError function_call_output(const Json& item, const std::string& param) {
        if (auto e = check_string(item, "call_id", param_path(param, "call_id"), true)) return e;
        const std::string call_id = item["call_id"].get<std::string>();
        if (!call_ids_.contains(call_id))
            return invalid_request("No function_call with call_id '" + call_id + "' comes before '" + param + "'.",
                                   param_path(param, "call_id"), "invalid_value");
        const Json* output = find_field(item, "output");
        auto text = item_text(output ? *output : Json(), param_path(param, "output"));
        if (!text) return text.error();
        messages_.push_back({{"role", "tool"}, {"tool_call_id", call_id}, {"content", *text}});
        return std::nullopt;
    }

    void take_reasoning(Json& message) {
        if (!pending_reasoning_.empty()) message["reasoning_content"] = pending_reasoning_;
        pending_reasoning_.clear();
    }

    Json& messages_;
    std::string pending_reasoning_;  // a reasoning item's text, for the assistant message after it
    std::set<std::string> call_ids_;
};

// --- tools, formats, effort ---

Json chat_tools(const Json& tools) {
    Json out = Json::array();
    for (const Json& tool : tools) {
        if (tool["type"] != "function") continue;
        Json function = {{"name", tool["name"]}};
        for (const char* key : {"description", "parameters", "strict"})
            if (tool.contains(key) && !tool[key].is_null()) function[key] = tool[key];
        out.push_back({{"type", "function"}, {"function", std::move(function)}});
    }
    return out;
}

// tool_choice as chat reads it; allowed_tools narrows `tools` to the ones it names.
FieldError chat_tool_choice(const Json& choice, Json& chat) {
    if (choice.is_string()) {
        chat["tool_choice"] = choice;
        return std::nullopt;
    }
    if (!choice.is_object()) return wrong_type("tool_choice", "a string or an object", choice);
    auto type = string_or(choice, "type", "tool_choice.type", "");
    if (!type) return type.error();
    if (*type == "function") {
        if (auto e = check_string(choice, "name", "tool_choice.name", true)) return e;
        chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", choice["name"]}}}};
        return std::nullopt;
    }
    if (*type == "allowed_tools") {
        auto mode = string_or(choice, "mode", "tool_choice.mode", "auto");
        if (!mode) return mode.error();
        std::set<std::string> allowed;
        if (const Json* tools = find_field(choice, "tools"); tools && tools->is_array())
            for (const Json& tool : *tools)
                if (tool.is_object() && tool.contains("name") && tool["name"].is_string()) allowed.insert(tool["name"]);
        Json kept = Json::array();
        for (Json& tool : chat["tools"])
            if (allowed.contains(tool["function"]["name"].get<std::string>())) kept.push_back(std::move(tool));
        chat["tools"] = std::move(kept);
        chat["tool_choice"] = *mode;
        return std::nullopt;
    }
    return unsupported("tool_choice", "of type '" + *type + "'");
}

FieldError chat_response_format(const Json& text, Json& chat) {
    const Json* format = find_field(text, "format");
    if (format == nullptr || format->is_null()) return std::nullopt;
    if (!format->is_object()) return wrong_type("text.format", "an object", *format);
    auto type_or = string_or(*format, "type", "text.format.type", "");
    if (!type_or) return type_or.error();
    const std::string& type = *type_or;
    if (type == "text") return std::nullopt;
    if (type == "json_object") {
        chat["response_format"] = {{"type", "json_object"}};
        return std::nullopt;
    }
    if (type != "json_schema")
        return invalid_request(
            "Invalid value for 'text.format.type': '" + type + "' (text, json_object or json_schema).",
            "text.format.type", "invalid_value");
    auto name = string_or(*format, "name", "text.format.name", "response");
    if (!name) return name.error();
    Json schema = {{"name", *name}};
    for (const char* key : {"schema", "strict", "description"})
        if (format->contains(key)) schema[key] = (*format)[key];
    chat["response_format"] = {{"type", "json_schema"}, {"json_schema", std::move(schema)}};
    return std::nullopt;
}

// none: no reasoning (a budget of 0); minimal is low and xhigh is high, the levels this server has budgets for.
FieldError chat_effort(const Json& reasoning, Json& chat) {
    const Json* effort = find_field(reasoning, "effort");
    if (effort == nullptr || effort->is_null()) return std::nullopt;
    const std::string level = effort->get<std::string>();
    if (level == "none") {
        if (!chat.contains("thinking_token_budget")) chat["thinking_token_budget"] = 0;
        return std::nullopt;
    }
    if (level == "minimal" || level == "low")
        chat["reasoning_effort"] = "low";
    else if (level == "medium")
        chat["reasoning_effort"] = "medium";
    else if (level == "high" || level == "xhigh")
        chat["reasoning_effort"] = "high";
    else
        return invalid_request(
            "Invalid value for 'reasoning.effort': '" + level + "' (none, minimal, low, medium, high or xhigh).",
            "reasoning.effort", "invalid_value");
    return std::nullopt;
}

}  // namespace

ApiResult<ResponsesRequest> parse_responses_request(const Json& body) {
    ResponsesRequest request;
    auto items = input_items(body);
    if (!items) return items.error();
    request.input_items = std::move(items).value();
    if (auto e = check_options(body)) return *e;
    if (auto e = check_tools(body, request.warnings)) return *e;
    if (auto e = read_flag(body, "store", request.store)) return *e;
    if (auto e = read_flag(body, "stream", request.stream)) return *e;
    if (const Json* previous = find_field(body, "previous_response_id"); previous && previous->is_string())
        request.previous_response_id = previous->get<std::string>();
    request.body = body;
    return request;
}

ApiResult<Json> responses_chat_body(const ResponsesRequest& request, const Json& conversation) {
    const Json& body = request.body;
    Json chat = Json::object();
    for (const auto& [key, value] : body.items())
        if (!listed(kResponsesFields, key) && !listed(kChatOnlyFields, key)) chat[key] = value;
    for (const char* key : {"model", "temperature", "top_p", "parallel_tool_calls", "user", "stream"})
        if (body.contains(key)) chat[key] = body[key];
    if (body.contains("max_output_tokens")) chat["max_tokens"] = body["max_output_tokens"];

    Json messages = Json::array();
    if (body.contains("instructions") && body["instructions"].is_string())
        messages.push_back({{"role", "system"}, {"content", body["instructions"]}});
    MessageWriter writer(messages);
    for (size_t i = 0; i < conversation.size(); ++i)
        if (auto e = writer.add(conversation[i], param_path("previous_response_id", i))) return *e;
    for (size_t i = 0; i < request.input_items.size(); ++i)
        if (auto e = writer.add(request.input_items[i], param_path("input", i))) return *e;
    chat["messages"] = std::move(messages);

    if (const Json* tools = find_field(body, "tools"); tools && tools->is_array()) {
        chat["tools"] = chat_tools(*tools);
        if (const Json* choice = find_field(body, "tool_choice"); choice && !choice->is_null())
            if (auto e = chat_tool_choice(*choice, chat)) return *e;
        // Clients that always send hosted tools (Codex) send tool_choice "auto" with them: with no function
        // tool left there is nothing to choose.
        if (chat["tools"].empty()) {
            const bool forced =
                chat.contains("tool_choice") && chat["tool_choice"] != "auto" && chat["tool_choice"] != "none";
            if (forced)
                return invalid_request("'tool_choice' forces a call but no function tool is in 'tools'.", "tool_choice",
                                       "invalid_value");
            chat.erase("tools");
            chat.erase("tool_choice");
        }
    }
    if (const Json* text = find_field(body, "text"); text && text->is_object())
        if (auto e = chat_response_format(*text, chat)) return *e;
    if (const Json* reasoning = find_field(body, "reasoning"); reasoning && reasoning->is_object())
        if (auto e = chat_effort(*reasoning, chat)) return *e;
    return chat;
}

ApiError in_responses_terms(ApiError error) {
    // `messages` keeps its name: the conversation's messages are not the input's items one for one.
    static const std::array<std::pair<std::string_view, std::string_view>, 3> kRenames = {
        {{"max_tokens", "max_output_tokens"},
         {"response_format.json_schema", "text.format"},
         {"response_format", "text.format"}}};
    for (const auto& [from, to] : kRenames) {
        if (!error.param.starts_with(from)) continue;
        const std::string renamed = std::string(to) + error.param.substr(from.size());
        size_t at = 0;
        while ((at = error.message.find(error.param, at)) != std::string::npos) {
            error.message.replace(at, error.param.size(), renamed);
            at += renamed.size();
        }
        error.param = renamed;
        break;
    }
    return error;
}

}  // namespace tempered::api
