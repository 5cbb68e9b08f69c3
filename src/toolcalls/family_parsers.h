// One constructor per family's parser (each in its own file); make_tool_call_parser picks among them.
#pragma once

#include <memory>

#include "toolcalls/tool_call_parser.h"

namespace tempered::toolcalls {

std::unique_ptr<ToolCallParser> make_hermes_parser();
std::unique_ptr<ToolCallParser> make_llama3_json_parser();
std::unique_ptr<ToolCallParser> make_mistral_parser();

}  // namespace tempered::toolcalls
