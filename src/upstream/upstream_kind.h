// Which engine the upstream is, and what its /v1/completions takes beyond OpenAI's own fields: the capability
// table the front sends by. A value the upstream cannot take is not sent (an engine may refuse an unknown
// field, or ignore it silently); when it would have changed the draw, the response's `sampling` report says
// `"applied": false` beside it and tempered:upstream_unapplied_total{param} counts it.
//
//   kind      prompt top_k min_p typical_p repetition_penalty DRY generated ids        logprobs by id GBNF in
//   tempered  ids    yes   yes   yes       yes                yes return_token_ids     yes structured_outputs vllm ids
//   yes   yes   no        yes                no  return_token_ids     yes            structured_outputs sglang    text
//   yes   yes   no        yes                no  return_token_ids     no             ebnf llamacpp  ids    yes   yes
//   yes       as repeat_penalty  yes return_tokens        no             grammar (+lazy) openai    text   no    no no
//   no                 no  no (text, tokenized) no             -
// A grammar (response_format, tool calls under `constrain`) goes as GBNF (grammar/gbnf.h) in the named field;
// a lazy one (tool_choice auto: free text until the call tag) only where the engine takes triggers
// (llama-server's grammar_lazy); elsewhere the calls are checked on the front after the fact, as under `flag`.
// sglang's prompt is the rendered text (special tokens written out): sgl-model-gateway 0.3.2 refuses a
// prompt of ids (HTTP 422), and the workers behind it tokenize the same text into the same ids. The sglang
// row is what sgl-model-gateway 0.3.2 over tempered workers takes (tests/e2e/test_gateway.py); the vllm and
// sglang rows follow their documented fields, neither engine was run here. llamacpp
// drives llama-server's own /completion, the endpoint that returns the generated ids. Without generated ids
// the front tokenizes the upstream's text again: the exactness of the rendered mode (the front's answer
// equals the upstream's draw token for token) is claimed only with ids.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "engine/generation.h"

namespace tempered::upstream {

enum class UpstreamKind { Tempered, Vllm, Sglang, LlamaCpp, OpenAi };

struct UpstreamCapabilities {
    bool top_k = false;
    bool min_p = false;
    bool typical_p = false;
    const char* repetition_penalty = nullptr;  // the field's name; null: not taken
    bool dry = false;                          // llama.cpp's dry_multiplier, dry_base, ...
    bool token_ids = false;                    // return_token_ids (vLLM's name)
    bool logprobs_by_id = false;               // return_tokens_as_token_ids (vLLM's name)
    bool llamacpp_native = false;              // llama-server's own /completion (llamacpp_native.h)
    bool prompt_ids = false;                   // the prompt as token ids; else as its text
    const char* grammar = nullptr;             // the field a GBNF grammar goes in; null: none is taken
    bool lazy_grammar = false;                 // llama-server's grammar_lazy with token triggers
};

const char* upstream_kind_name(UpstreamKind kind);  // as --upstream-kind takes it
// "tempered", "vllm", "sglang", "llamacpp", "openai"; "auto" is the caller's (detect_upstream_kind).
Result<UpstreamKind> parse_upstream_kind(std::string_view name);
UpstreamCapabilities capabilities_of(UpstreamKind kind);

// The `sampling` report's names of the values in `options` that would change the draw and that an upstream
// with `capabilities` cannot take.
std::vector<std::string> unapplied_sampling(const GenerationOptions& options, const UpstreamCapabilities& capabilities);

}  // namespace tempered::upstream
