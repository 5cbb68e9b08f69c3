// Tool calls in model output: the families' call syntaxes, and a parser per family that splits the text
// a model writes into content and calls.
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

namespace tempered::toolcalls {

enum class ToolCallFamily {
    Hermes,      // Qwen2.5, Hermes: <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>, one block per call
    Llama3Json,  // Llama 3.x: the whole answer is {"name": ..., "parameters": {...}}, maybe after <|python_tag|>
    Mistral,     // Mistral: [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]
};

std::string_view family_name(ToolCallFamily family);  // "hermes", "llama3_json", "mistral"
std::optional<ToolCallFamily> family_from_name(std::string_view name);
// The family whose call syntax a chat template teaches, from its distinctive markers; nullopt when none.
std::optional<ToolCallFamily> detect_family(std::string_view chat_template);

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
