// The parser of families whose calls open inside free text with a marker (Hermes' <tool_call>, Mistral's
// [TOOL_CALLS], a bare {"name": ... at a line start): content streams until something that may open a
// call, the block from there is held until it ends, then parsed. A family says what opens a block, where
// a block ends and how it reads.
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
    struct Opener {
        enum class State { None, Partial, Found } state = State::None;
        size_t at = 0;  // Partial: text[at...] may still open a block; Found: the block starts here
        int kind = 0;   // the family's own tag for which opener it was
    };
    struct BlockEnd {
        enum class State { Incomplete, Complete, Broken } state = State::Incomplete;
        size_t end = 0;  // Complete: the block is text[0, end); Broken: text[0, end) is plain content
    };
    // The first place in `text` that opens or may open a block. `line_start`: text[0] begins a line.
    virtual Opener find_opener(std::string_view text, bool line_start) const = 0;
    // Where the block that starts `text` (opener included) ends. Broken: it is not a call after all.
    virtual BlockEnd find_block_end(std::string_view text, int kind) const = 0;
    // The calls a block holds (a complete one, or an unfinished one at the end of the output).
    virtual std::optional<std::vector<ParsedToolCall>> parse_block(std::string_view block, int kind) const = 0;

private:
    void scan_content(ParsedText& out);
    bool scan_block(ParsedText& out);
    void close_block(std::string_view block, ParsedText& out);
    void add_content(std::string_view text, ParsedText& out);

    bool in_block_ = false;
    int block_kind_ = 0;
    std::string pending_;             // text not yet said: a possible opener, or the open block
    bool line_start_ = true;          // pending_ begins a line (the output's start counts)
    std::string held_space_;          // whitespace that is content only if more content follows
    std::string space_before_block_;  // the held whitespace before an open block: content if it fails
    bool after_call_ = false;         // whitespace right after a call separates calls: not content
};

enum class Prefix { None, Partial, Found };
// How `text` from `at` compares with `literal`: Found (all of it there), Partial (the text ends inside it).
Prefix match_literal(std::string_view text, size_t at, std::string_view literal);
}  // namespace tempered::toolcalls
