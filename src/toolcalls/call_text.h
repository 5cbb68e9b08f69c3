// The pieces every family's parser shares: reading a call object out of JSON text, finding where a JSON
// value ends in a stream, and how much of a text's end could be the start of a tag.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include "toolcalls/tool_call_parser.h"

namespace tempered::toolcalls {

// How much a call object must look like one. Inside a call tag, Loose: only "name" is required (no
// arguments means {}). Without a tag, where ordinary JSON answers also occur, Exact: "name" and the
// arguments and no other member.
enum class CallShape { Loose, Exact };

// `text` (surrounding whitespace allowed) as calls: one object {"name": "...", "arguments"|"parameters":
// {...}}, or an array of them. Arguments may also be a string holding a JSON object (some models double
// encode). nullopt when the text is anything else.
std::optional<std::vector<ParsedToolCall>> parse_call_json(std::string_view text, CallShape shape);

// `text` as one or more call JSON values separated by whitespace or `separator` (Llama's ';'), or nullopt.
std::optional<std::vector<ParsedToolCall>> parse_call_sequence(std::string_view text, char separator, CallShape shape);

// Where the JSON object or array that starts `text` (after whitespace) ends, one past its closing
// bracket. Incomplete: not closed yet. NotJson: the first non-space character opens no object or array.
struct JsonValueEnd {
    enum class State { Incomplete, Complete, NotJson } state = State::Incomplete;
    size_t end = 0;  // Complete only
};
JsonValueEnd find_json_value_end(std::string_view text);

// The length of the longest end of `text` that is a proper prefix of `tag`: what must be held back
// because the next delta may complete the tag.
size_t partial_tag_length(std::string_view text, std::string_view tag);

bool is_json_space(char c);

}  // namespace tempered::toolcalls
