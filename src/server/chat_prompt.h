// What a chat request gives the model's chat template: the messages as transformers passes them (the
// role, the text with text parts joined, name, tool calls), and the client's tools and template
// kwargs in the client's key order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "api/chat_request.h"
#include "chat/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace tempered {

// Everything but the tokenizer's special tokens, which the caller adds.
// `reasoning_keys` (chat/reasoning_history.h): the names an assistant message's past reasoning is given under.
ChatTemplateInputs chat_template_inputs(const api::ChatRequest& request,
                                        const std::vector<std::string>& reasoning_keys = {});

}  // namespace tempered
