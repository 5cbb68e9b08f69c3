#include "toolcalls/call_text.h"

#include <nlohmann/json.hpp>

namespace tempered::toolcalls {
namespace {

using json = nlohmann::ordered_json;

std::optional<std::string> arguments_text(const json& object) {
    const json* arguments = nullptr;
    if (auto it = object.find("arguments"); it != object.end())
        arguments = &*it;
    else if (auto it2 = object.find("parameters"); it2 != object.end())
        arguments = &*it2;
    if (arguments == nullptr) return "{}";
    if (arguments->is_object()) return arguments->dump();
    if (!arguments->is_string()) return std::nullopt;
    const json decoded = json::parse(arguments->get<std::string>(), nullptr, false);
    if (decoded.is_discarded() || !decoded.is_object()) return std::nullopt;
    return decoded.dump();
}

std::optional<ParsedToolCall> call_from_json(const json& object, CallShape shape) {
    if (!object.is_object()) return std::nullopt;
    if (shape == CallShape::Exact &&
        (object.size() != 2 || !(object.contains("arguments") || object.contains("parameters")))) {
        return std::nullopt;
    }
    auto name = object.find("name");
    if (name == object.end() || !name->is_string() || name->get<std::string>().empty()) return std::nullopt;
    std::optional<std::string> arguments = arguments_text(object);
    if (!arguments) return std::nullopt;
    return ParsedToolCall{name->get<std::string>(), std::move(*arguments)};
}

}  // namespace

bool is_json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::optional<std::vector<ParsedToolCall>> parse_call_json(std::string_view text, CallShape shape) {
    const json parsed = json::parse(text, nullptr, false);
    if (parsed.is_discarded()) return std::nullopt;
    std::vector<ParsedToolCall> calls;
    if (parsed.is_array()) {
        if (parsed.empty()) return std::nullopt;
        for (const json& item : parsed) {
            auto call = call_from_json(item, shape);
            if (!call) return std::nullopt;
            calls.push_back(std::move(*call));
        }
        return calls;
    }
    auto call = call_from_json(parsed, shape);
    if (!call) return std::nullopt;
    calls.push_back(std::move(*call));
    return calls;
}

std::optional<std::vector<ParsedToolCall>> parse_call_sequence(std::string_view text, char separator, CallShape shape) {
    std::vector<ParsedToolCall> calls;
    while (true) {
        const JsonValueEnd end = find_json_value_end(text);
        if (end.state != JsonValueEnd::State::Complete) return std::nullopt;
        auto parsed = parse_call_json(text.substr(0, end.end), shape);
        if (!parsed) return std::nullopt;
        for (ParsedToolCall& call : *parsed) calls.push_back(std::move(call));
        text.remove_prefix(end.end);
        size_t next = 0;
        while (next < text.size() && (is_json_space(text[next]) || text[next] == separator)) ++next;
        if (next == text.size()) return calls;
        text.remove_prefix(next);
    }
}

JsonValueEnd find_json_value_end(std::string_view text) {
    size_t i = 0;
    while (i < text.size() && is_json_space(text[i])) ++i;
    if (i == text.size()) return {};
    if (text[i] != '{' && text[i] != '[') return {JsonValueEnd::State::NotJson, 0};
    int depth = 0;
    bool in_string = false, escaped = false;
    for (; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                in_string = false;
            continue;
        }
        if (c == '"')
            in_string = true;
        else if (c == '{' || c == '[')
            ++depth;
        else if ((c == '}' || c == ']') && --depth == 0)
            return {JsonValueEnd::State::Complete, i + 1};
    }
    return {};
}

size_t partial_tag_length(std::string_view text, std::string_view tag) {
    for (size_t length = std::min(text.size(), tag.size() - 1); length > 0; --length) {
        if (text.substr(text.size() - length) == tag.substr(0, length)) return length;
    }
    return 0;
}

void ParsedText::append(ParsedText other) {
    content += other.content;
    for (ParsedToolCall& call : other.calls) calls.push_back(std::move(call));
    unparsed += other.unparsed;
}

}  // namespace tempered::toolcalls
