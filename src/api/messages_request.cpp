#include "api/messages_request.h"

#include <algorithm>
#include <array>
#include <set>
#include <string_view>

namespace tempered::api {
namespace {

// The Messages API's own fields, read here rather than passed on.
constexpr std::array<std::string_view, 18> kMessagesFields = {
    "model",       "messages",           "system",       "max_tokens",   "tools",
    "tool_choice", "temperature",        "top_p",        "top_k",        "stop_sequences",
    "stream",      "thinking",           "metadata",     "service_tier", "container",
    "mcp_servers", "context_management", "output_config"};
// Chat fields that would say something else here.
constexpr std::array<std::string_view, 8> kChatOnlyFields = {"n",         "logprobs",           "max_completion_tokens",
                                                             "functions", "function_call",      "response_format",
                                                             "stop",      "parallel_tool_calls"};

template <size_t N>
bool listed(const std::array<std::string_view, N>& names, std::string_view key) {
    return std::find(names.begin(), names.end(), key) != names.end();
}

ApiError missing(const std::string& param) {
    return invalid_request(param + ": Field required", param, "missing_required_parameter");
}

FieldError require_string(const Json& object, std::string_view key, const std::string& param) {
    const Json* field = find_field(object, key);
    if (field == nullptr || field->is_null()) return missing(param);
    if (!field->is_string()) return wrong_type(param, "a string", *field);
    return std::nullopt;
}

// A block's type, which every block must name.
ApiResult<std::string> block_type(const Json& block, const std::string& param) {
    if (!block.is_object()) return wrong_type(param, "an object", block);
    if (auto e = require_string(block, "type", param_path(param, "type"))) return *e;
    return block["type"].get<std::string>();
}

ApiError unknown_block(const std::string& param, const std::string& type, std::string_view allowed) {
    return invalid_request(
        param_path(param, "type") + ": '" + type + "' blocks are not supported here (" + std::string(allowed) + ").",
        param_path(param, "type"), "invalid_value");
}

// Text blocks joined (a system prompt, a tool_result's content).
ApiResult<std::string> text_of(const Json& content, const std::string& param) {
    if (content.is_string()) return content.get<std::string>();
    if (!content.is_array()) return wrong_type(param, "a string or an array", content);
    std::string text;
    for (size_t i = 0; i < content.size(); ++i) {
        const std::string block_param = param_path(param, i);
        auto type = block_type(content[i], block_param);
        if (!type) return type.error();
        if (*type != "text") return unknown_block(block_param, *type, "text");
        if (auto e = require_string(content[i], "text", param_path(block_param, "text"))) return *e;
        text += content[i]["text"].get<std::string>();
    }
    return text;
}

class ChatMessages {
public:
    FieldError add(const Json& message, const std::string& param) {
        if (!message.is_object()) return wrong_type(param, "an object", message);
        if (auto e = require_string(message, "role", param_path(param, "role"))) return e;
        const std::string role = message["role"].get<std::string>();
        if (role != "user" && role != "assistant")
            return invalid_request(param_path(param, "role") + ": '" + role + "' (user or assistant).",
                                   param_path(param, "role"), "invalid_value");
        const Json* content = find_field(message, "content");
        const std::string content_param = param_path(param, "content");
        if (content == nullptr || content->is_null()) return missing(content_param);
        if (content->is_string()) {
            messages.push_back({{"role", role}, {"content", *content}});
            return std::nullopt;
        }
        if (!content->is_array()) return wrong_type(content_param, "a string or an array", *content);
        return role == "user" ? user_blocks(*content, content_param) : assistant_blocks(*content, content_param);
    }

    Json messages = Json::array();

private:
    // Tool results become tool messages, in order; the text blocks one user message after them.
    FieldError user_blocks(const Json& blocks, const std::string& param) {
        std::string text;
        bool has_text = false;
        for (size_t i = 0; i < blocks.size(); ++i) {
            const std::string block_param = param_path(param, i);
            auto type = block_type(blocks[i], block_param);
            if (!type) return type.error();
            if (*type == "text") {
                if (auto e = require_string(blocks[i], "text", param_path(block_param, "text"))) return e;
                text += blocks[i]["text"].get<std::string>();
                has_text = true;
            } else if (*type == "tool_result") {
                if (auto e = tool_result(blocks[i], block_param)) return e;
            } else {
                return unknown_block(block_param, *type, "text, tool_result");
            }
        }
        if (has_text || blocks.empty()) messages.push_back({{"role", "user"}, {"content", text}});
        return std::nullopt;
    }

    FieldError tool_result(const Json& block, const std::string& param) {
        if (auto e = require_string(block, "tool_use_id", param_path(param, "tool_use_id"))) return e;
        const std::string id = block["tool_use_id"].get<std::string>();
        if (!tool_use_ids_.contains(id))
            return invalid_request(
                param_path(param, "tool_use_id") + ": no earlier tool_use block has id '" + id + "'.",
                param_path(param, "tool_use_id"), "invalid_value");
        std::string text;
        if (const Json* content = find_field(block, "content"); content && !content->is_null()) {
            auto read = text_of(*content, param_path(param, "content"));
            if (!read) return read.error();
            text = std::move(read).value();
        }
        if (const Json* is_error = find_field(block, "is_error");
            is_error && is_error->is_boolean() && is_error->get<bool>())
            text = "Error: " + text;
        messages.push_back({{"role", "tool"}, {"tool_call_id", id}, {"content", text}});
        return std::nullopt;
    }

    // One assistant message: thinking as its reasoning, text as its content, tool_use blocks as its calls.
    FieldError assistant_blocks(const Json& blocks, const std::string& param) {
        Json message = {{"role", "assistant"}, {"content", ""}};
        std::string reasoning;
        for (size_t i = 0; i < blocks.size(); ++i) {
            const std::string block_param = param_path(param, i);
            auto type = block_type(blocks[i], block_param);
            if (!type) return type.error();
            const Json& block = blocks[i];
            if (*type == "text") {
                if (auto e = require_string(block, "text", param_path(block_param, "text"))) return e;
                message["content"] = message["content"].get<std::string>() + block["text"].get<std::string>();
            } else if (*type == "thinking") {
                if (auto e = require_string(block, "thinking", param_path(block_param, "thinking"))) return e;
                reasoning += block["thinking"].get<std::string>();
            } else if (*type == "redacted_thinking") {
                continue;  // encrypted by another server: nothing a template can show
            } else if (*type == "tool_use") {
                if (auto e = tool_use(block, block_param, message)) return e;
            } else {
                return unknown_block(block_param, *type, "text, thinking, redacted_thinking, tool_use");
            }
        }
        if (!reasoning.empty()) message["reasoning_content"] = reasoning;
        if (message.contains("tool_calls") && message["content"] == "") message["content"] = nullptr;
        messages.push_back(std::move(message));
        return std::nullopt;
    }

    FieldError tool_use(const Json& block, const std::string& param, Json& message) {
        for (const char* key : {"id", "name"})
            if (auto e = require_string(block, key, param_path(param, key))) return e;
        const Json* input = find_field(block, "input");
        if (input == nullptr || !input->is_object())
            return input ? wrong_type(param_path(param, "input"), "an object", *input)
                         : missing(param_path(param, "input"));
        const std::string id = block["id"].get<std::string>();
        tool_use_ids_.insert(id);
        message["tool_calls"].push_back(
            {{"id", id}, {"type", "function"}, {"function", {{"name", block["name"]}, {"arguments", input->dump()}}}});
        return std::nullopt;
    }

    std::set<std::string> tool_use_ids_;
};

FieldError chat_tools(const Json& tools, Json& chat, std::vector<std::string>& warnings) {
    if (!tools.is_array()) return wrong_type("tools", "an array", tools);
    Json out = Json::array();
    for (size_t i = 0; i < tools.size(); ++i) {
        const Json& tool = tools[i];
        const std::string param = param_path("tools", i);
        if (!tool.is_object()) return wrong_type(param, "an object", tool);
        const Json* type = find_field(tool, "type");
        if (type && !type->is_null() && !type->is_string())
            return wrong_type(param_path(param, "type"), "a string", *type);
        if (type && type->is_string() && *type != "custom") {
            warnings.push_back(param + " (type '" + type->get<std::string>() +
                               "') was left out: this server runs no server tools, so the model does not see it");
            continue;
        }
        if (auto e = require_string(tool, "name", param_path(param, "name"))) return e;
        const Json* schema = find_field(tool, "input_schema");
        if (schema == nullptr || schema->is_null()) return missing(param_path(param, "input_schema"));
        if (!schema->is_object()) return wrong_type(param_path(param, "input_schema"), "an object", *schema);
        // OpenAI's key order (name, description, parameters): templates print tools with tojson.
        Json function = {{"name", tool["name"]}};
        if (const Json* description = find_field(tool, "description"); description && description->is_string())
            function["description"] = *description;
        function["parameters"] = *schema;
        out.push_back({{"type", "function"}, {"function", std::move(function)}});
    }
    if (!out.empty()) chat["tools"] = std::move(out);
    return std::nullopt;
}

FieldError chat_tool_choice(const Json& choice, Json& chat) {
    if (!choice.is_object()) return wrong_type("tool_choice", "an object", choice);
    if (auto e = require_string(choice, "type", "tool_choice.type")) return e;
    const std::string type = choice["type"].get<std::string>();
    if (const Json* serial = find_field(choice, "disable_parallel_tool_use"); serial && serial->is_boolean())
        chat["parallel_tool_calls"] = !serial->get<bool>();
    if (type == "auto" || type == "none") {
        if (chat.contains("tools")) chat["tool_choice"] = type;
        return std::nullopt;
    }
    if (!chat.contains("tools"))
        return invalid_request("tool_choice: '" + type + "' needs a tool in 'tools'.", "tool_choice", "invalid_value");
    if (type == "any") {
        chat["tool_choice"] = "required";
        return std::nullopt;
    }
    if (type == "tool") {
        if (auto e = require_string(choice, "name", "tool_choice.name")) return e;
        chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", choice["name"]}}}};
        return std::nullopt;
    }
    return invalid_request("tool_choice.type: '" + type + "' (auto, any, tool or none).", "tool_choice.type",
                           "invalid_value");
}

// enabled: its budget_tokens; disabled: no reasoning (a budget of 0); adaptive: the server's own budget.
FieldError chat_thinking(const Json& thinking, Json& chat) {
    if (!thinking.is_object()) return wrong_type("thinking", "an object", thinking);
    if (auto e = require_string(thinking, "type", "thinking.type")) return e;
    const std::string type = thinking["type"].get<std::string>();
    if (type == "enabled") {
        const Json* budget = find_field(thinking, "budget_tokens");
        if (budget == nullptr || budget->is_null()) return missing("thinking.budget_tokens");
        if (!budget->is_number_integer() || budget->get<int64_t>() < 0)
            return wrong_type("thinking.budget_tokens", "a non-negative integer", *budget);
        chat["thinking_token_budget"] = *budget;
        return std::nullopt;
    }
    if (type == "disabled") {
        chat["thinking_token_budget"] = 0;
        return std::nullopt;
    }
    if (type == "adaptive") return std::nullopt;
    return invalid_request("thinking.type: '" + type + "' (enabled, disabled or adaptive).", "thinking.type",
                           "invalid_value");
}

// output_config (newer SDKs): effort as reasoning_effort (xhigh and max are high, the levels this server has
// budgets for) and format {type: json_schema, schema} as response_format.
FieldError chat_output_config(const Json& config, Json& chat) {
    if (!config.is_object()) return wrong_type("output_config", "an object", config);
    if (const Json* effort = find_field(config, "effort"); effort && !effort->is_null()) {
        if (!effort->is_string()) return wrong_type("output_config.effort", "a string", *effort);
        const std::string level = effort->get<std::string>();
        if (level == "low" || level == "medium" || level == "high")
            chat["reasoning_effort"] = level;
        else if (level == "xhigh" || level == "max")
            chat["reasoning_effort"] = "high";
        else
            return invalid_request("output_config.effort: '" + level + "' (low, medium, high, xhigh or max).",
                                   "output_config.effort", "invalid_value");
    }
    const Json* format = find_field(config, "format");
    if (format == nullptr || format->is_null()) return std::nullopt;
    if (!format->is_object()) return wrong_type("output_config.format", "an object", *format);
    if (auto e = require_string(*format, "type", "output_config.format.type")) return e;
    if ((*format)["type"] != "json_schema")
        return invalid_request("output_config.format.type: only 'json_schema' is known.", "output_config.format.type",
                               "invalid_value");
    const Json* schema = find_field(*format, "schema");
    if (schema == nullptr || schema->is_null()) return missing("output_config.format.schema");
    chat["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"name", "output"}, {"schema", *schema}}}};
    return std::nullopt;
}

FieldError chat_system(const Json& body, Json& messages) {
    const Json* system = find_field(body, "system");
    if (system == nullptr || system->is_null()) return std::nullopt;
    auto text = text_of(*system, "system");
    if (!text) return text.error();
    messages.push_back({{"role", "system"}, {"content", *text}});
    return std::nullopt;
}

}  // namespace

ApiResult<MessagesRequest> parse_messages_request(const Json& body, bool count_only) {
    MessagesRequest request;
    Json chat = Json::object();
    for (const auto& [key, value] : body.items())
        if (!listed(kMessagesFields, key) && !listed(kChatOnlyFields, key)) chat[key] = value;
    for (const char* key : {"model", "temperature", "top_p", "top_k", "stream"})
        if (body.contains(key)) chat[key] = body[key];
    const Json* max_tokens = find_field(body, "max_tokens");
    if (!count_only && (max_tokens == nullptr || max_tokens->is_null())) return missing("max_tokens");
    if (max_tokens && !count_only) chat["max_tokens"] = *max_tokens;
    if (const Json* stops = find_field(body, "stop_sequences"); stops && !stops->is_null()) chat["stop"] = *stops;

    ChatMessages writer;
    if (auto e = chat_system(body, writer.messages)) return *e;
    const Json* messages = find_field(body, "messages");
    if (messages == nullptr || messages->is_null()) return missing("messages");
    if (!messages->is_array()) return wrong_type("messages", "an array", *messages);
    for (size_t i = 0; i < messages->size(); ++i)
        if (auto e = writer.add((*messages)[i], param_path("messages", i))) return *e;
    chat["messages"] = std::move(writer.messages);

    if (const Json* tools = find_field(body, "tools"); tools && !tools->is_null())
        if (auto e = chat_tools(*tools, chat, request.warnings)) return *e;
    if (const Json* choice = find_field(body, "tool_choice"); choice && !choice->is_null())
        if (auto e = chat_tool_choice(*choice, chat)) return *e;
    if (const Json* thinking = find_field(body, "thinking"); thinking && !thinking->is_null())
        if (auto e = chat_thinking(*thinking, chat)) return *e;
    if (const Json* config = find_field(body, "output_config"); config && !config->is_null())
        if (auto e = chat_output_config(*config, chat)) return *e;
    if (const Json* stream = find_field(body, "stream"); stream && !stream->is_null()) {
        if (!stream->is_boolean()) return wrong_type("stream", "a boolean", *stream);
        request.stream = stream->get<bool>();
    }
    if (count_only) chat.erase("stream");
    request.chat_body = std::move(chat);
    return request;
}

}  // namespace tempered::api
