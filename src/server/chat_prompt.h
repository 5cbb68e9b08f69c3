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
ChatTemplateInputs chat_template_inputs(const api::ChatRequest& request);

// The prompt tokens of a rendered chat: special tokens parsed, BOS added as the model asks unless the
// template already wrote it. (The same rule as LoadedModel::tokenize_chat, which `tempered run` uses.)
std::vector<int32_t> chat_prompt_tokens(const Tokenizer& tokenizer, const std::string& rendered);

}  // namespace tempered
