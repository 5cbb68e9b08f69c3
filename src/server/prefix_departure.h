// --log-level debug: where a prompt left the prefix cache. The cache matches whole blocks, so the prompt's first
// uncached token is where the reuse stopped; the text on both sides of it shows why (a template that renders
// the history differently from what the model wrote, a client that dropped the reasoning, a changed system
// prompt). The note is built only when debug lines are written.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace tempered {

// A function of the cached token count that describes the departure in `prompt` (copied); `tokenizer` outlives it.
std::function<std::string(int64_t cached_tokens)> prefix_departure_note(const Tokenizer& tokenizer,
                                                                        std::vector<int32_t> prompt);

}  // namespace tempered
