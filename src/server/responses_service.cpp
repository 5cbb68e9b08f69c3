#include "server/responses_service.h"

#include "api/responses_request.h"
#include "api/sse.h"
#include "server/responses_response.h"

namespace tempered {
namespace {

nlohmann::json plain(const api::Json& value) { return nlohmann::json::parse(value.dump()); }

api::ApiError response_not_found(const std::string& id, const std::string& param) {
    api::ApiError error =
        api::invalid_request("No response with id '" + id +
                                 "' is stored on this server (unknown, expired, deleted, or made under "
                                 "another API key; responses are kept per server, in memory).",
                             param, "response_not_found");
    error.http_status = 404;
    return error;
}

// The response object's fields known before generation: the request's, echoed as OpenAI does, with the
// sampling values the generation runs with.
nlohmann::json response_frame(const api::ResponsesRequest& request, const ChatTurn& turn, const std::string& id,
                              const std::string& model) {
    const api::Json& body = request.body;
    auto echo = [&body](const char* key, nlohmann::json fallback) {
        return body.contains(key) && !body[key].is_null() ? plain(body[key]) : fallback;
    };
    nlohmann::json frame = {
        {"id", id},
        {"object", "response"},
        {"created_at",
         std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count()},
        {"model", model},
        {"instructions", echo("instructions", nullptr)},
        {"metadata", echo("metadata", nlohmann::json::object())},
        {"tools", echo("tools", nlohmann::json::array())},
        {"tool_choice", echo("tool_choice", "auto")},
        {"parallel_tool_calls", turn.request.parallel_tool_calls},
        {"temperature", turn.sampling.temperature.value},
        {"top_p", turn.sampling.top_p.value},
        {"max_output_tokens", echo("max_output_tokens", nullptr)},
        {"previous_response_id", echo("previous_response_id", nullptr)},
        {"reasoning", {{"effort", nullptr}, {"summary", nullptr}}},
        {"text", echo("text", {{"format", {{"type", "text"}}}})},
        {"store", request.store},
        {"truncation", echo("truncation", "disabled")},
    };
    if (body.contains("reasoning") && body["reasoning"].is_object())
        for (const char* key : {"effort", "summary"})
            if (body["reasoning"].contains(key)) frame["reasoning"][key] = plain(body["reasoning"][key]);
    if (body.contains("user")) frame["user"] = plain(body["user"]);
    if (!request.warnings.empty()) frame["warnings"] = request.warnings;
    return frame;
}

}  // namespace

void ResponsesService::register_routes(GuardedRoutes& routes) {
    add_route(routes, "POST", "/v1/responses", [this](const http::HttpRequest& request) { return create(request); });
    add_route(routes, "GET", "/v1/responses/{id}",
              [this](const http::HttpRequest& request) { return retrieve(request); });
    add_route(routes, "DELETE", "/v1/responses/{id}",
              [this](const http::HttpRequest& request) { return remove(request); });
}

http::HttpResponse ResponsesService::create(const http::HttpRequest& http_request) {
    const auto received = std::chrono::steady_clock::now();
    GenerationPath& path = chat_.path();
    auto body = api::parse_json_object(http_request.body);
    if (!body) return api::to_http_response(body.error());
    auto request = api::parse_responses_request(*body);
    if (!request) return api::to_http_response(request.error());

    const std::optional<std::string> client = path.client_of(http_request);
    api::Json conversation = api::Json::array();
    if (request->previous_response_id) {
        auto previous = store_.get(*request->previous_response_id, client);
        if (!previous)
            return api::to_http_response(response_not_found(*request->previous_response_id, "previous_response_id"));
        conversation = std::move(previous->conversation);
    }
    auto chat_body = api::responses_chat_body(*request, conversation);
    if (!chat_body) return api::to_http_response(chat_body.error());
    auto turn = chat_.prepare(http_request, *chat_body, received);
    if (!turn) return api::to_http_response(api::in_responses_terms(turn.error()));

    const std::string id = api::make_response_id("resp_");
    nlohmann::json frame = response_frame(*request, *turn, id, path.settings().served_model_name);
    std::optional<ToolCallSetup> tool_calls = std::move(turn->tool_calls);
    auto job = chat_.start(*turn, http_request, "responses", id);
    if (!job) return api::to_http_response(api::in_responses_terms(job.error()));
    if (job->report_sampling) frame["sampling"] = job->sampling;

    auto builder = std::make_unique<ResponsesBuilder>(std::move(frame), job->stream, job->sampling);
    if (tool_calls) builder->read_tool_calls(std::move(*tool_calls), path.metrics());
    builder->count_answers(path.metrics());
    if (request->store) {
        for (api::Json& item : request->input_items) conversation.push_back(std::move(item));
        builder->on_finished([this, id, client, conversation = std::move(conversation)](const nlohmann::json& done) {
            StoredResponse stored{done, conversation, client, std::chrono::steady_clock::now()};
            for (const nlohmann::json& item : done["output"])
                stored.conversation.push_back(api::Json::parse(item.dump()));
            store_.put(id, std::move(stored));
        });
    }
    job->builder = std::move(builder);
    return path.answer(std::move(job).value(), http_request);
}

http::HttpResponse ResponsesService::retrieve(const http::HttpRequest& request) {
    const std::string& id = request.path_params.at("id");
    auto stored = store_.get(id, chat_.path().client_of(request));
    if (!stored) return api::to_http_response(response_not_found(id, "response_id"));
    return http::HttpResponse::json(200, api::dump_json(stored->response));
}

http::HttpResponse ResponsesService::remove(const http::HttpRequest& request) {
    const std::string& id = request.path_params.at("id");
    if (!store_.erase(id, chat_.path().client_of(request)))
        return api::to_http_response(response_not_found(id, "response_id"));
    return http::HttpResponse::json(200, api::dump_json({{"id", id}, {"object", "response"}, {"deleted", true}}));
}

}  // namespace tempered
