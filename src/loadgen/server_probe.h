// Questions asked of the server before a benchmark: which models it serves (GET /v1/models) and how
// many tokens a text is (POST /tokenize, which is not part of the OpenAI API: tempered and vLLM take
// {"prompt", "add_special_tokens"}, llama.cpp's server takes {"content", "add_special"}; all answer
// {"tokens": [...]}).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "loadgen/http_session.h"
#include "loadgen/request_body.h"

namespace tempered::loadgen {

// The model ids of a GET /v1/models reply, in the server's order.
Result<std::vector<std::string>> model_ids(const HttpReply& reply);

// Which body shape the server's /tokenize understands.
enum class TokenizeDialect { PromptField, ContentField };

// Asks /tokenize in each dialect about a short text; nullopt when the server answers neither with a
// non-empty token list (no such endpoint, or another shape). llama.cpp's server answers the other
// dialect with an empty list, hence the check on the count.
std::optional<TokenizeDialect> detect_tokenize_dialect(HttpSession& session, const std::string& model);

// Tokens of `text` with the special tokens a completion prompt gets (BOS, where the model adds one).
Result<int64_t> count_tokens(HttpSession& session, TokenizeDialect dialect, const std::string& model,
                             const std::string& text);

// usage.prompt_tokens of one non-streamed request for `text` with max_tokens 1: what the server adds
// around a chat message (the chat template) is this minus count_tokens(text).
Result<int64_t> served_prompt_tokens(HttpSession& session, const RequestSettings& settings, const std::string& text);

}  // namespace tempered::loadgen
