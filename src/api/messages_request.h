// POST /v1/messages and /v1/messages/count_tokens (Anthropic's Messages API) read as the chat completions
// request they amount to: `system` (a string or text blocks) is the first message; content blocks become chat
// messages (text; an assistant's `thinking` as reasoning_content and `tool_use` as tool_calls; a user's
// `tool_result` blocks as tool messages, each needing an earlier tool_use with its id); `tools` with
// `input_schema` become function tools (server tool types are left out with a warning); tool_choice auto /
// any / tool / none as auto / required / the named function / none (disable_parallel_tool_use as
// parallel_tool_calls false); stop_sequences as stop; `thinking` {type: enabled, budget_tokens} as the
// reasoning budget (disabled: a budget of 0); output_config's effort and json_schema format as reasoning_effort
// and response_format. What changes nothing here (cache_control, metadata) is accepted
// and ignored; an unknown block type is a 400. Other fields pass on as they came, for chat's parser to check.
#pragma once

#include <string>
#include <vector>

#include "api/errors.h"
#include "api/json_fields.h"

namespace tempered::api {

struct MessagesRequest {
    Json chat_body;
    bool stream = false;
    std::vector<std::string> warnings;  // tools left out, each named
};

// `count_only` (count_tokens): max_tokens is not required.
ApiResult<MessagesRequest> parse_messages_request(const Json& body, bool count_only);

}  // namespace tempered::api
