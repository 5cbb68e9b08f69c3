#include "toolcalls/tool_call_parser.h"

namespace tempered::toolcalls {

std::unique_ptr<ToolCallParser> make_tool_call_parser(ToolCallFamily family) { return describe(family).make_parser(); }

ParsedText parse_tool_calls(ToolCallFamily family, std::string_view text) {
    auto parser = make_tool_call_parser(family);
    ParsedText out;
    parser->feed(text, out);
    parser->finish(out);
    return out;
}

}  // namespace tempered::toolcalls
