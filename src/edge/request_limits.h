// The operator's bounds on one request (tempered serve's --max-tokens-limit, --max-prompt-tokens,
// --max-request-tokens, --request-timeout). The token bounds are checked here once the prompt is
// tokenized, before anything reaches the engine; the timeout is the generation loop's to enforce.
// An explicit value over a bound is a 400 naming the field, never silently clamped: a client that asked
// for 8000 tokens and got 2000 would read a finish_reason "length" as the model's doing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "api/errors.h"
#include "api/generation_request.h"

namespace tempered {

struct RequestLimits {
    int64_t max_tokens = 0;          // a choice's max_tokens; 0: the context is the only bound
    int64_t max_prompt_tokens = 0;   // prompt tokens after the chat template; 0: the context only
    int64_t max_request_tokens = 0;  // n x max_tokens summed over a request's prompts; 0: unbounded
    double timeout_seconds = 0;      // wall clock from receipt to the last byte; 0: none
};

// A prompt longer than --max-prompt-tokens: 400 context_length_exceeded naming `param` ("messages",
// "prompt", "prompt[2]"), the code clients already handle by shortening their input.
std::optional<api::ApiError> check_prompt_tokens(const RequestLimits& limits, int64_t prompt_tokens,
                                                 const std::string& param);

// The max_tokens each choice runs with. A request's own value is checked against --max-tokens-limit
// and, times its n choices of `prompts` prompts, against --max-request-tokens. An omitted one is
// `fallback` (the context left, or the endpoint's default) lowered to fit both bounds.
api::ApiResult<int64_t> choice_max_tokens(const RequestLimits& limits, const api::GenerationRequest& generation,
                                          int64_t fallback, size_t prompts);

}  // namespace tempered
