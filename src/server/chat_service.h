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

// A chat request ready to generate: parsed, checked, rendered (or left to the upstream in passthrough), its
// sampling resolved under its client. The Responses and Messages services translate their bodies into a
// chat body and come through here too, so every API gets the same checks, grammar, reasoning and guard.
struct ChatTurn {
    api::ChatRequest request;
    GenerationOptions options;
    ResolvedSampling sampling;
    std::optional<std::string> client;
    std::optional<ToolCallSetup> tool_calls;  // nullopt: the answer is content only
    std::chrono::steady_clock::time_point received;
};

class ChatService {
public:
    // Logs the tool-call parser and the reasoning split chosen, and why chat requests will be refused
    // if the chat template does not parse. `path` outlives the service.
    explicit ChatService(GenerationPath& path);

    void register_routes(GuardedRoutes& routes);

    // A chat completions body (already parsed JSON) made ready to generate.
    api::ApiResult<ChatTurn> prepare(const http::HttpRequest& http_request, const api::Json& body,
                                     std::chrono::steady_clock::time_point received);
    // Submits the turn's generation: the job for the generation loop, without its builder, logged under
    // `endpoint` and `response_id`. The turn's options are moved out.
    api::ApiResult<GenerationJob> start(ChatTurn& turn, const http::HttpRequest& http_request, const char* endpoint,
                                        const std::string& response_id);
    GenerationPath& path() const { return path_; }

private:
    http::HttpResponse chat(const http::HttpRequest& request);
    // chat_passthrough.h: the request's own fields go upstream; no prompt, grammar or reasoning split here.
    api::ApiResult<GenerationOptions> passthrough_options(const api::Json& body, const ChatTurn& turn) const;
    // The model name, the request's own checks and its tools (nullopt: the answer is content only).
    api::ApiResult<std::optional<ToolCallSetup>> checked_tool_calls(const api::ChatRequest& request) const;
    // The engine's options for the chat prompt: limits, grammar, reasoning, the KV transfer's part.
    api::ApiResult<GenerationOptions> chat_options(const api::ChatRequest& request, std::vector<int32_t> prompt,
                                                   const ResolvedSampling& sampling,
                                                   const std::optional<ToolCallSetup>& tools);

    GenerationPath& path_;
    ChosenToolCalls tool_calls_;  // the parser chosen for this model, and the validation mode
    ReasoningSetup reasoning_;    // the reasoning parser chosen for this model (none: content only)
};

}  // namespace tempered
