#include "server/chat_passthrough.h"

#include "api/json_fields.h"

namespace tempered {

std::optional<api::ApiError> refused_in_passthrough(const api::ChatRequest& request) {
    if (request.thinking_token_budget)
        return api::invalid_request(
            "'thinking_token_budget' is not available in passthrough: a budget is enforced by continuing a prompt "
            "the front renders (serve with --model and a chat template, without --upstream-chat)",
            "thinking_token_budget");
    if (request.logprobs)
        return api::invalid_request(
            "'logprobs' is not available in passthrough (the front does not render the "
            "upstream's tokens here)",
            "logprobs");
    return std::nullopt;
}

std::string passthrough_fields(const api::Json& parsed) {
    api::Json fields = api::Json::object();
    for (const char* name : {"messages", "tools", "tool_choice", "parallel_tool_calls", "response_format",
                             "structured_outputs", "reasoning_effort", "stop", "user", "chat_template_kwargs"}) {
        const auto found = parsed.find(name);
        if (found != parsed.end() && !found->is_null()) fields[name] = *found;
    }
    return fields.dump();
}

std::string passthrough_note() {
    return "chat: passthrough to the upstream's /v1/chat/completions (it renders the conversation and parses "
           "reasoning and tool calls; the front resolves sampling, checks tool calls as under 'flag' and guards "
           "loops over the streamed text); refused with a 400: thinking_token_budget, logprobs";
}

}  // namespace tempered
