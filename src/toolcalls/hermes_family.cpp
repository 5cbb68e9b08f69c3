// Hermes / Qwen2.5: each call is its own block,
//   <tool_call>
//   {"name": "get_weather", "arguments": {"city": "Paris"}}
//   </tool_call>
// and parallel calls are consecutive blocks. Small Qwen models often leave the tags out and write the
// same object bare at the start of a line, or inside a ```json fence (one object per line for parallel
// calls); both read as calls too when the object opens with "name" and holds only the name and the
// arguments (llama.cpp's Hermes parser accepts the same forms). Anything else, including a JSON answer
// such as {"name": "Ann", "age": 3}, stays content.
// The family's descriptor (tool_call_family.h) is at the end of this file, beside its parser.
#include "toolcalls/call_text.h"
#include "toolcalls/tagged_call_parser.h"
#include "toolcalls/tool_call_family.h"

namespace tempered::toolcalls {
namespace {

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";
constexpr std::string_view kFence = "```";
constexpr std::string_view kJson = "json";
enum Kind { kTagged, kBare, kFenced };

size_t skip_space(std::string_view text, size_t at) {
    while (at < text.size() && is_json_space(text[at])) ++at;
    return at;
}

// `{` then "name" as the first key.
Prefix match_bare(std::string_view text, size_t at) {
    if (at >= text.size()) return Prefix::Partial;
    if (text[at] != '{') return Prefix::None;
    const size_t key = skip_space(text, at + 1);
    return key == text.size() ? Prefix::Partial : match_literal(text, key, "\"name\"");
}

// Where the fence's JSON starts: after ``` and an optional "json" tag.
size_t fence_body(std::string_view text) {
    size_t at = kFence.size();
    if (match_literal(text, at, kJson) == Prefix::Found) at += kJson.size();
    return at;
}

Prefix match_fence(std::string_view text, size_t at) {
    if (const Prefix fence = match_literal(text, at, kFence); fence != Prefix::Found) return fence;
    size_t body = at + kFence.size();
    const Prefix tag = match_literal(text, body, kJson);
    if (tag == Prefix::Partial) return Prefix::Partial;
    if (tag == Prefix::Found) body += kJson.size();
    return match_bare(text, skip_space(text, body));
}

class HermesParser final : public TaggedCallParser {
private:
    Opener find_opener(std::string_view text, bool line_start) const override {
        for (size_t at = 0; at < text.size(); ++at) {
            const Opener opener = opener_at(text, at, at == 0 ? line_start : text[at - 1] == '\n');
            if (opener.state != Opener::State::None) return opener;
        }
        return {};
    }

    static Opener opener_at(std::string_view text, size_t at, bool at_line_start) {
        auto opener = [at](Prefix match, int kind) {
            if (match == Prefix::None) return Opener{};
            return Opener{match == Prefix::Found ? Opener::State::Found : Opener::State::Partial, at, kind};
        };
        if (text[at] == '<') return opener(match_literal(text, at, kOpen), kTagged);
        if (!at_line_start) return {};
        if (text[at] == '{') return opener(match_bare(text, at), kBare);
        if (text[at] == '`') return opener(match_fence(text, at), kFenced);
        return {};
    }

    BlockEnd find_block_end(std::string_view text, int kind) const override {
        if (kind == kTagged) {
            const size_t close = text.find(kClose, kOpen.size());
            if (close == std::string_view::npos) return {};
            return {BlockEnd::State::Complete, close + kClose.size()};
        }
        if (kind == kBare) {
            const JsonValueEnd end = find_json_value_end(text);
            if (end.state == JsonValueEnd::State::Incomplete) return {};
            if (end.state == JsonValueEnd::State::NotJson) return {BlockEnd::State::Broken, 0};
            return {BlockEnd::State::Complete, end.end};
        }
        return find_fence_end(text);
    }

    // A fence holds call objects separated by whitespace, then the closing ```.
    static BlockEnd find_fence_end(std::string_view text) {
        size_t at = fence_body(text);
        while (true) {
            const JsonValueEnd value = find_json_value_end(text.substr(at));
            if (value.state == JsonValueEnd::State::Incomplete) return BlockEnd{};
            if (value.state == JsonValueEnd::State::NotJson) return {BlockEnd::State::Broken, at};
            at = skip_space(text, at + value.end);
            if (at == text.size()) return BlockEnd{};
            const Prefix close = match_literal(text, at, kFence);
            if (close == Prefix::Found) return {BlockEnd::State::Complete, at + kFence.size()};
            if (close == Prefix::Partial) return BlockEnd{};
            if (text[at] != '{') return {BlockEnd::State::Broken, at};
        }
    }

    std::optional<std::vector<ParsedToolCall>> parse_block(std::string_view block, int kind) const override {
        if (kind == kBare) return parse_call_json(block, CallShape::Exact);
        if (kind == kTagged) {
            block.remove_prefix(kOpen.size());
            if (block.ends_with(kClose)) block.remove_suffix(kClose.size());
            return parse_call_json(block, CallShape::Loose);
        }
        block.remove_prefix(fence_body(block));
        if (block.ends_with(kFence)) block.remove_suffix(kFence.size());
        return parse_call_sequence(block, ' ', CallShape::Exact);
    }
};

}  // namespace

const ToolCallFamilyDescriptor& hermes_family() {
    static const ToolCallFamilyDescriptor family{
        .id = ToolCallFamily::Hermes,
        .name = "hermes",
        .template_markers = {{kOpen}},
        .trigger = kOpen,
        .syntax = {.region_open = "",
                   .region_close = "",
                   .call_open = "<tool_call>\n",
                   .call_close = "}\n</tool_call>",
                   .arguments_key = "arguments",
                   .separator = "\n"},
        .make_parser = []() -> std::unique_ptr<ToolCallParser> { return std::make_unique<HermesParser>(); },
    };
    return family;
}

}  // namespace tempered::toolcalls
