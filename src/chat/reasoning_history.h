// Past reasoning in a conversation's history, handed to the chat template under the name that template reads:
// Qwen3's (and vLLM-style templates) read message.reasoning_content, gpt-oss's harmony template reads
// message.thinking, some read message.reasoning. The one mapping for every API that carries reasoning back
// (chat's reasoning_content / reasoning, the Responses API's reasoning items, the Messages API's thinking
// blocks). A template that reads none of them renders no past reasoning (DeepSeek-R1's drops it on purpose), and
// its prompt stays as it was.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tempered {

// The names among reasoning_content, thinking and reasoning that `template_source` reads from a message
// (`.name`, `['name']` or `["name"]`), in that order.
std::vector<std::string> reasoning_keys(std::string_view template_source);

}  // namespace tempered
