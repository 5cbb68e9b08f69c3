// Mistral (v0.3 tokenizer templates): one tag, then every call of the turn as one JSON array,
//   [TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]
// The newer `[TOOL_CALLS]name[ARGS]{...}` layout is not read: it stays content.
// The family's descriptor (tool_call_family.h) is at the end of this file, beside its parser.
#include "toolcalls/call_text.h"
#include "toolcalls/tagged_call_parser.h"
#include "toolcalls/tool_call_family.h"

namespace tempered::toolcalls {
namespace {

constexpr std::string_view kTag = "[TOOL_CALLS]";

class MistralParser final : public TaggedCallParser {
private:
    Opener find_opener(std::string_view text, bool) const override {
        for (size_t at = text.find('['); at != std::string_view::npos; at = text.find('[', at + 1)) {
            const Prefix match = match_literal(text, at, kTag);
            if (match == Prefix::Found) return {Opener::State::Found, at, 0};
            if (match == Prefix::Partial) return {Opener::State::Partial, at, 0};
        }
        return {};
    }

    BlockEnd find_block_end(std::string_view text, int) const override {
        const JsonValueEnd end = find_json_value_end(text.substr(kTag.size()));
        switch (end.state) {
            case JsonValueEnd::State::Incomplete: return {};
            case JsonValueEnd::State::NotJson: return {BlockEnd::State::Broken, kTag.size()};
            case JsonValueEnd::State::Complete: return {BlockEnd::State::Complete, kTag.size() + end.end};
        }
        return {};
    }

    std::optional<std::vector<ParsedToolCall>> parse_block(std::string_view block, int) const override {
        return parse_call_json(block.substr(kTag.size()), CallShape::Loose);
    }
};

}  // namespace

const ToolCallFamilyDescriptor& mistral_family() {
    static const ToolCallFamilyDescriptor family{
        .id = ToolCallFamily::Mistral,
        .name = "mistral",
        .template_markers = {{kTag}},
        .trigger = kTag,
        .syntax = {.region_open = "[TOOL_CALLS][",
                   .region_close = "]",
                   .call_open = "",
                   .call_close = "}",
                   .arguments_key = "arguments",
                   .separator = ", "},
        .make_parser = []() -> std::unique_ptr<ToolCallParser> { return std::make_unique<MistralParser>(); },
    };
    return family;
}

}  // namespace tempered::toolcalls
