// A tool-call family, described once: how a chat template shows that it teaches the family, the text
// that opens a call, the call syntax a grammar writes, and the parser that reads calls back. Each family
// is one file (hermes_family.cpp, ...) that defines its descriptor next to its parser, so the markers,
// the tag and the syntax are spelled in one place; tool_call_family.cpp lists them. Detection, the
// parser factory, the call-region grammar and the server's trigger token all read this table.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace tempered::toolcalls {

enum class ToolCallFamily {
    Hermes,      // Qwen2.5, Hermes: <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>, one block per call
    Llama3Json,  // Llama 3.x: the whole answer is {"name": ..., "parameters": {...}}, maybe after <|python_tag|>
    Mistral,     // Mistral: [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]
    Harmony,     // gpt-oss: <|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>{...}<|call|>
};

class ToolCallParser;

// The call region as a grammar writes it (tool_call_grammar.h): region_open, then calls joined by
// separator, then region_close; each call is
//   call_open {"name": "NAME", "ARGUMENTS_KEY": ARGS call_close
// with ARGS in the canonical layout of grammar/json_schema.h.
struct CallSyntax {
    std::string_view region_open, region_close;  // around all calls
    std::string_view call_open, call_close;      // around each call (call_close ends its object)
    std::string_view arguments_key;
    std::string_view separator;  // between calls
};

struct ToolCallFamilyDescriptor {
    ToolCallFamily id;
    std::string_view name;  // --tool-call-parser's value: "hermes", "llama3_json", "mistral"
    // A chat template teaches the family when it holds every marker of at least one of these sets.
    std::vector<std::vector<std::string_view>> template_markers;
    // The text a call region opens with ("" when a call opens with no tag, as Llama 3's bare object): the
    // token that spells it starts the lazy grammar of tool_choice auto.
    std::string_view trigger;
    CallSyntax syntax;
    std::unique_ptr<ToolCallParser> (*make_parser)();
    // Harmony: its grammar (build_harmony_header_grammar) is one message header, so it only ever starts at its
    // trigger and the output is free after it, whatever tool_choice and parallel_tool_calls say: a required call is
    // not forced, only held to the declared tools once the model writes one.
    bool lazy_only = false;
};

// Every family, in detection order (see tool_call_family.cpp).
std::span<const ToolCallFamilyDescriptor* const> tool_call_families();
const ToolCallFamilyDescriptor& describe(ToolCallFamily family);

std::string_view family_name(ToolCallFamily family);  // "hermes", "llama3_json", "mistral", "harmony"
std::optional<ToolCallFamily> family_from_name(std::string_view name);
// The family whose call syntax a chat template teaches, from its distinctive markers; nullopt when none.
std::optional<ToolCallFamily> detect_family(std::string_view chat_template);

}  // namespace tempered::toolcalls
