// POST /v1/chat/completions: the messages through the chat template (parsed once, here), the tool calls
// and the reasoning split chosen for the served model, then the shared generation path; in passthrough
// (chat_passthrough.h) the request's own fields go to the upstream, which renders them.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/chat_request.h"
#include "chat/chat_template.h"
#include "edge/guarded_routes.h"
#include "server/chat_reasoning.h"
#include "server/chat_tool_calls.h"
#include "server/generation_path.h"

namespace tempered {

class ChatService {
public:
    // Logs the tool-call parser and the reasoning split chosen, and why chat requests will be refused
    // if the chat template does not parse. `path` outlives the service.
    explicit ChatService(GenerationPath& path);

    void register_routes(GuardedRoutes& routes);

private:
    http::HttpResponse chat(const http::HttpRequest& request);
    http::HttpResponse passthrough(const http::HttpRequest& http_request, const api::Json& body,
                                   const api::ChatRequest& request, std::optional<ToolCallSetup> tool_calls,
                                   std::chrono::steady_clock::time_point received);
    // Submits the generation and answers with it (the generation loop).
    http::HttpResponse answer(const http::HttpRequest& http_request, const api::ChatRequest& request,
                              GenerationOptions options, const ResolvedSampling& sampling,
                              const std::optional<std::string>& client, std::optional<ToolCallSetup> tool_calls,
                              std::chrono::steady_clock::time_point received);
    // The model name, the request's own checks and its tools (nullopt: the answer is content only).
    api::ApiResult<std::optional<ToolCallSetup>> checked_tool_calls(const api::ChatRequest& request) const;
    // The engine's options for the chat prompt: limits, grammar, reasoning, the KV transfer's part.
    api::ApiResult<GenerationOptions> chat_options(const api::ChatRequest& request, std::vector<int32_t> prompt,
                                                   const ResolvedSampling& sampling,
                                                   const std::optional<ToolCallSetup>& tools);
    // The messages through the chat template, tokenized.

    GenerationPath& path_;
    ChosenToolCalls tool_calls_;  // the parser chosen for this model, and the validation mode
    ReasoningSetup reasoning_;    // the reasoning parser chosen for this model (none: content only)
};

}  // namespace tempered
