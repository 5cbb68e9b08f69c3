// Hermes / Qwen2.5: each call is its own block,
//   <tool_call>
//   {"name": "get_weather", "arguments": {"city": "Paris"}}
//   </tool_call>
// and parallel calls are consecutive blocks.
#include "toolcalls/call_text.h"
#include "toolcalls/family_parsers.h"
#include "toolcalls/tagged_call_parser.h"

namespace tempered::toolcalls {
namespace {

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";

class HermesParser final : public TaggedCallParser {
public:
    HermesParser() : TaggedCallParser(std::string(kOpen)) {}

private:
    BlockEnd find_block_end(std::string_view text) const override {
        const size_t close = text.find(kClose);
        if (close == std::string_view::npos) return {};
        return {BlockEnd::State::Complete, close + kClose.size()};
    }

    std::optional<std::vector<ParsedToolCall>> parse_block(std::string_view block) const override {
        if (block.ends_with(kClose)) block.remove_suffix(kClose.size());
        return parse_call_json(block);
    }
};

}  // namespace

std::unique_ptr<ToolCallParser> make_hermes_parser() { return std::make_unique<HermesParser>(); }

}  // namespace tempered::toolcalls
