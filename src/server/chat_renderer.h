// A conversation as the served model reads it: the chat template (parsed once), past reasoning under the names
// it reads (chat/reasoning_history.h), the tokenizer's special tokens. Shared by every endpoint that renders
// messages (chat, /tokenize with messages, and the agent APIs), so that each renders them the same way.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "api/chat_request.h"
#include "api/errors.h"
#include "chat/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace tempered {

class ChatRenderer {
public:
    // `template_source` "" when the model has none (every render is then a 400 saying so).
    ChatRenderer(const Tokenizer& tokenizer, const std::string& template_source);

    // The request's messages (and tools, chat_template_kwargs) templated and tokenized.
    api::ApiResult<std::vector<int32_t>> render(const api::ChatRequest& request,
                                                bool add_generation_prompt = true) const;
    // Why chat requests are refused, when the template did not parse; "" otherwise.
    std::string refusal() const { return parsed_ ? "" : parsed_.error().message; }

private:
    const Tokenizer& tokenizer_;
    api::ApiResult<ChatTemplate> parsed_;
    std::vector<std::string> reasoning_keys_;
};

}  // namespace tempered
