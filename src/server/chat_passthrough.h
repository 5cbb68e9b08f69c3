// Upstream passthrough of a chat request (--upstream-chat, or a front whose model has no chat template): the
// upstream renders the conversation and parses reasoning and tool calls itself; the front resolves sampling,
// checks the returned tool calls against the declared tools (as under `flag`) and runs the loop guard over the
// streamed text (output/text_pieces.h). What needs the rendered prompt or its tokens is refused with a 400
// naming the field: thinking_token_budget (a budget is forced by continuing a prompt the front rendered) and
// logprobs (tokens of a vocabulary the front does not read here); the guard's resample is refused at start-up.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "api/chat_request.h"
#include "api/errors.h"
#include "api/json_fields.h"

namespace tempered {

// A request passthrough cannot serve, as its 400; nullopt when it can.
std::optional<api::ApiError> refused_in_passthrough(const api::ChatRequest& request);

// The request's own fields the upstream reads (messages, tools, tool_choice, parallel_tool_calls,
// response_format, structured_outputs, reasoning_effort, stop, user, chat_template_kwargs), from its parsed body,
// as JSON text; sampling, n, max_tokens and streaming are the front's to write.
std::string passthrough_fields(const api::Json& body);

// What the start-up log says passthrough leaves out.
std::string passthrough_note();

}  // namespace tempered
