#include "toolcalls/tool_call_parser.h"

#include "toolcalls/family_parsers.h"

namespace tempered::toolcalls {

std::string_view family_name(ToolCallFamily family) {
    switch (family) {
        case ToolCallFamily::Hermes: return "hermes";
        case ToolCallFamily::Llama3Json: return "llama3_json";
        case ToolCallFamily::Mistral: return "mistral";
    }
    return "hermes";
}

std::optional<ToolCallFamily> family_from_name(std::string_view name) {
    for (ToolCallFamily family : {ToolCallFamily::Hermes, ToolCallFamily::Llama3Json, ToolCallFamily::Mistral}) {
        if (family_name(family) == name) return family;
    }
    return std::nullopt;
}

// Markers only a template that teaches the family's syntax contains. Checked in this order because a
// Mistral or Llama template never mentions <tool_call>, while Hermes-style ones may mention JSON.
std::optional<ToolCallFamily> detect_family(std::string_view chat_template) {
    if (chat_template.find("<tool_call>") != std::string_view::npos) return ToolCallFamily::Hermes;
    if (chat_template.find("[TOOL_CALLS]") != std::string_view::npos) return ToolCallFamily::Mistral;
    const bool llama3_headers = chat_template.find("<|start_header_id|>") != std::string_view::npos;
    if (chat_template.find("<|python_tag|>") != std::string_view::npos ||
        (llama3_headers && chat_template.find("\"parameters\"") != std::string_view::npos)) {
        return ToolCallFamily::Llama3Json;
    }
    return std::nullopt;
}

std::unique_ptr<ToolCallParser> make_tool_call_parser(ToolCallFamily family) {
    switch (family) {
        case ToolCallFamily::Hermes: return make_hermes_parser();
        case ToolCallFamily::Llama3Json: return make_llama3_json_parser();
        case ToolCallFamily::Mistral: return make_mistral_parser();
    }
    return make_hermes_parser();
}

ParsedText parse_tool_calls(ToolCallFamily family, std::string_view text) {
    auto parser = make_tool_call_parser(family);
    ParsedText out;
    parser->feed(text, out);
    parser->finish(out);
    return out;
}

}  // namespace tempered::toolcalls
