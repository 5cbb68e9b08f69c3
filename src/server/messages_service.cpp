#include "server/messages_service.h"

#include "api/messages_request.h"
#include "server/messages_response.h"

namespace tempered {
namespace {

constexpr auto kAnthropic = api::ErrorEnvelope::Anthropic;

}  // namespace

void MessagesService::register_routes(GuardedRoutes& routes) {
    add_route(
        routes, "POST", "/v1/messages", [this](const http::HttpRequest& request) { return create(request); },
        kAnthropic);
    add_route(
        routes, "POST", "/v1/messages/count_tokens",
        [this](const http::HttpRequest& request) { return count_tokens(request); }, kAnthropic);
}

http::HttpResponse MessagesService::create(const http::HttpRequest& http_request) {
    const auto received = std::chrono::steady_clock::now();
    GenerationPath& path = chat_.path();
    auto body = api::parse_json_object(http_request.body);
    if (!body) return api::to_http_response(body.error(), kAnthropic);
    auto request = api::parse_messages_request(*body, false);
    if (!request) return api::to_http_response(request.error(), kAnthropic);
    auto turn = chat_.prepare(http_request, request->chat_body, received);
    if (!turn) return api::to_http_response(turn.error(), kAnthropic);

    const std::string id = api::make_response_id("msg_");
    nlohmann::json frame = {
        {"id", id}, {"type", "message"}, {"role", "assistant"}, {"model", path.settings().served_model_name}};
    if (!request->warnings.empty()) frame["warnings"] = request->warnings;
    const auto prompt_tokens = static_cast<int64_t>(turn->options.prompt.size());
    std::optional<ToolCallSetup> tool_calls = std::move(turn->tool_calls);
    auto job = chat_.start(*turn, http_request, "messages", id);
    if (!job) return api::to_http_response(job.error(), kAnthropic);
    auto builder = std::make_unique<MessagesBuilder>(std::move(frame), job->stream, prompt_tokens, job->sampling);
    if (tool_calls) builder->read_tool_calls(std::move(*tool_calls), path.metrics());
    builder->count_answers(path.metrics());
    job->builder = std::move(builder);
    return path.answer(std::move(job).value(), http_request);
}

http::HttpResponse MessagesService::count_tokens(const http::HttpRequest& http_request) {
    GenerationPath& path = chat_.path();
    if (auto error = path.needs_own_model("/v1/messages/count_tokens"))
        return api::to_http_response(*error, kAnthropic);
    auto body = api::parse_json_object(http_request.body);
    if (!body) return api::to_http_response(body.error(), kAnthropic);
    auto request = api::parse_messages_request(*body, true);
    if (!request) return api::to_http_response(request.error(), kAnthropic);
    auto parsed = api::parse_chat_request_json(request->chat_body);
    if (!parsed) return api::to_http_response(parsed.error(), kAnthropic);
    if (auto error = path.check_model(parsed->generation.model)) return api::to_http_response(*error, kAnthropic);
    auto prompt = path.chat_renderer().render(*parsed);
    if (!prompt) return api::to_http_response(prompt.error(), kAnthropic);
    return json_response({{"input_tokens", prompt->size()}});
}

}  // namespace tempered
