// Tool calls in model output: a parser per family (its descriptor's make_parser, tool_call_family.h)
// splits the text a model writes into content and calls.
//
// Every parser is incremental: fed the text deltas of one choice, it says content as soon as the text can
// no longer be the start of a call (only a possible prefix of the call tag is held back), and a call once
// its whole block has arrived and parsed. A call is announced only when it parses, so a block that looks
// like a call but does not parse can still go back to the content verbatim (counted as `unparsed`):
// nothing is lost, and the whole-response parse (`parse_tool_calls`, the same parser fed everything at
// once) equals the streamed one exactly.
//
// A call's `arguments` is the model's JSON object re-serialised compactly in the model's key order
// (`{"city":"Paris"}`): one string whatever whitespace the model chose, valid JSON by construction.
// Whitespace that only separates calls (Qwen writes "\n" between blocks) is not content.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "toolcalls/tool_call_family.h"

namespace tempered::toolcalls {

struct ParsedToolCall {
    std::string name;
    std::string arguments;  // a JSON object, compact (see above)
};

// What a stretch of output turned out to be.
struct ParsedText {
    std::string content;
    std::vector<ParsedToolCall> calls;
    int unparsed = 0;  // blocks that looked like calls but did not parse (their text is in `content`)

    void append(ParsedText other);
};

class ToolCallParser {
public:
    virtual ~ToolCallParser() = default;
    // Adds to `out` what the text so far now makes certain.
    virtual void feed(std::string_view delta, ParsedText& out) = 0;
    // The output has ended: adds whatever was held back.
    virtual void finish(ParsedText& out) = 0;
};

std::unique_ptr<ToolCallParser> make_tool_call_parser(ToolCallFamily family);

// A whole output at once: the same parser, fed once.
ParsedText parse_tool_calls(ToolCallFamily family, std::string_view text);

}  // namespace tempered::toolcalls
