// The parser of families whose calls open with a tag inside free text (Hermes' <tool_call>, Mistral's
// [TOOL_CALLS]): content streams until the tag, the block after it is held until it ends, then parsed.
// A family says only where its block ends and how its body reads.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "toolcalls/tool_call_parser.h"

namespace tempered::toolcalls {

class TaggedCallParser : public ToolCallParser {
public:
    void feed(std::string_view delta, ParsedText& out) final;
    void finish(ParsedText& out) final;

protected:
    explicit TaggedCallParser(std::string start_tag) : start_tag_(std::move(start_tag)) {}

    struct BlockEnd {
        enum class State { Incomplete, Complete, Broken } state = State::Incomplete;
        size_t end = 0;  // Complete: the block is text[0, end)
    };
    // Where the block that follows the start tag ends in `text` (everything after the tag so far).
    virtual BlockEnd find_block_end(std::string_view text) const = 0;
    // The calls a complete block holds (or an unfinished one, at the end of the output).
    virtual std::optional<std::vector<ParsedToolCall>> parse_block(std::string_view block) const = 0;

private:
    void scan_content(ParsedText& out);
    bool scan_block(ParsedText& out);
    void close_block(std::string_view block, ParsedText& out);
    void add_content(std::string_view text, ParsedText& out);

    std::string start_tag_;
    bool in_block_ = false;
    std::string pending_;             // text not yet said: a possible tag prefix, or the open block
    std::string held_space_;          // whitespace that is content only if more content follows
    std::string space_before_block_;  // the held whitespace before an open block: content if it fails
    bool after_call_ = false;         // whitespace right after a call separates calls: not content
};

}  // namespace tempered::toolcalls
