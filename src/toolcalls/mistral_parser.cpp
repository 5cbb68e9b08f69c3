// Mistral (v0.3 tokenizer templates): one tag, then every call of the turn as one JSON array,
//   [TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]
// The newer `[TOOL_CALLS]name[ARGS]{...}` layout is not read: it stays content.
#include "toolcalls/call_text.h"
#include "toolcalls/family_parsers.h"
#include "toolcalls/tagged_call_parser.h"

namespace tempered::toolcalls {
namespace {

class MistralParser final : public TaggedCallParser {
public:
    MistralParser() : TaggedCallParser("[TOOL_CALLS]") {}

private:
    BlockEnd find_block_end(std::string_view text) const override {
        const JsonValueEnd end = find_json_value_end(text);
        switch (end.state) {
            case JsonValueEnd::State::Incomplete: return {};
            case JsonValueEnd::State::NotJson: return {BlockEnd::State::Broken, 0};
            case JsonValueEnd::State::Complete: return {BlockEnd::State::Complete, end.end};
        }
        return {};
    }

    std::optional<std::vector<ParsedToolCall>> parse_block(std::string_view block) const override {
        return parse_call_json(block);
    }
};

}  // namespace

std::unique_ptr<ToolCallParser> make_mistral_parser() { return std::make_unique<MistralParser>(); }

}  // namespace tempered::toolcalls
