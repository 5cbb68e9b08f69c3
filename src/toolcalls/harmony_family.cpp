// Harmony (gpt-oss): a call is a message of its own on the commentary channel, addressed to the function,
//   <|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Paris"}<|call|>
// the form the chat template writes calls in. The model writes its header in another order
// ("<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>") and ends the call with <|call|>,
// an end-of-generation token; the harmony reasoning splitter (reasoning/harmony_splitter.h) reads the header and
// hands this parser every call in the form above, closed. One call per message; a turn that calls ends there.
// Under --tool-call-validation constrain a lazy grammar starts at each <|channel|> outside reasoning and holds the
// header to a known channel and a call to a declared function with schema-valid arguments
// (build_harmony_header_grammar, below); calls are checked after parsing all the same, as every family's.
// The family's descriptor (tool_call_family.h) is at the end of this file, beside its parser.
#include <nlohmann/json.hpp>

#include "grammar/json_schema.h"
#include "toolcalls/call_text.h"
#include "toolcalls/tagged_call_parser.h"
#include "toolcalls/tool_call_family.h"
#include "toolcalls/tool_call_grammar.h"

namespace tempered::toolcalls {
namespace {

constexpr std::string_view kHarmonyCallOpen = "<|start|>assistant to=functions.";
constexpr std::string_view kHarmonyArguments = "<|message|>";
constexpr std::string_view kHarmonyNameEnd = "<|channel|>";
constexpr std::string_view kHarmonyCallClose = "<|call|>";

class HarmonyParser final : public TaggedCallParser {
private:
    Opener find_opener(std::string_view text, bool) const override {
        for (size_t at = text.find('<'); at != std::string_view::npos; at = text.find('<', at + 1)) {
            const Prefix match = match_literal(text, at, kHarmonyCallOpen);
            if (match == Prefix::Found) return {Opener::State::Found, at, 0};
            if (match == Prefix::Partial) return {Opener::State::Partial, at, 0};
        }
        return {};
    }

    BlockEnd find_block_end(std::string_view text, int) const override {
        const size_t close = text.find(kHarmonyCallClose, kHarmonyCallOpen.size());
        if (close == std::string_view::npos) return {};
        return {BlockEnd::State::Complete, close + kHarmonyCallClose.size()};
    }

    std::optional<std::vector<ParsedToolCall>> parse_block(std::string_view block, int) const override {
        block.remove_prefix(kHarmonyCallOpen.size());
        if (block.ends_with(kHarmonyCallClose)) block.remove_suffix(kHarmonyCallClose.size());
        const size_t name_end = block.find(kHarmonyNameEnd), arguments = block.find(kHarmonyArguments);
        if (name_end == std::string_view::npos || arguments == std::string_view::npos || name_end == 0)
            return std::nullopt;
        const std::string name(block.substr(0, name_end));
        const std::string_view body = block.substr(arguments + kHarmonyArguments.size());
        const JsonValueEnd end = find_json_value_end(body);
        if (end.state != JsonValueEnd::State::Complete) return std::nullopt;
        for (size_t i = end.end; i < body.size(); ++i)
            if (!is_json_space(body[i])) return std::nullopt;
        // The arguments object read as every family's: compact, in the model's key order.
        const std::string call = "{\"name\": " + nlohmann::json(name).dump() +
                                 ", \"arguments\": " + std::string(body.substr(0, end.end)) + "}";
        return parse_call_json(call, CallShape::Exact);
    }
};

}  // namespace

Result<grammar::Grammar, grammar::SchemaError> build_harmony_header_grammar(const DeclaredTools& tools) {
    using grammar::Expr;
    grammar::GrammarBuilder builder;
    std::vector<Expr> headers = {Expr::literal("analysis<|message|>"), Expr::literal("final<|message|>"),
                                 Expr::literal("commentary<|message|>")};
    for (const DeclaredTool& tool : tools.tools()) {
        auto arguments = grammar::compile_json_schema_into(builder, tool.parameters);
        if (!arguments) return arguments.error();
        headers.push_back(
            Expr::sequence({Expr::literal("commentary to=functions." + tool.name + " <|constrain|>json<|message|>"),
                            Expr::reference(*arguments)}));
    }
    const grammar::RuleId root = builder.add_rule();
    builder.define(root, Expr::sequence({Expr::literal("<|channel|>"), Expr::choice(std::move(headers))}));
    auto built = builder.build(root);
    if (!built) return grammar::SchemaError{"", "", built.error().message};
    return std::move(built.value());
}

const ToolCallFamilyDescriptor& harmony_family() {
    static const ToolCallFamilyDescriptor family{
        .id = ToolCallFamily::Harmony,
        .name = "harmony",
        .template_markers = {{"<|channel|>commentary", "<|call|>"}},
        .trigger = "<|channel|>",
        .syntax = {.region_open = "",
                   .region_close = "",
                   .call_open = "",
                   .call_close = "}",
                   .arguments_key = "arguments",
                   .separator = ""},
        .make_parser = []() -> std::unique_ptr<ToolCallParser> { return std::make_unique<HarmonyParser>(); },
        .lazy_only = true,
    };
    return family;
}

}  // namespace tempered::toolcalls
