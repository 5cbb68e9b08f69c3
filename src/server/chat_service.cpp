#include "server/chat_service.h"

#include "server/chat_passthrough.h"
#include "server/chat_response.h"
#include "server/prefix_departure.h"

namespace tempered {
namespace {

// The parser named by the flag, or the one the chat template teaches.
ChosenToolCalls choose_tool_calls(const ServiceSettings& settings, const std::string& chat_template) {
    ChosenToolCalls chosen;
    chosen.validation = settings.tool_calls.validation;
    if (settings.tool_calls.parser == "auto")
        chosen.family = toolcalls::detect_family(chat_template);
    else if (settings.tool_calls.parser != "none")
        chosen.family = toolcalls::family_from_name(settings.tool_calls.parser);
    return chosen;
}

}  // namespace

ChatService::ChatService(GenerationPath& path) : path_(path) {
    const ServedModel& model = path_.model();
    const ServiceSettings& settings = path_.settings();
    tool_calls_ = choose_tool_calls(settings, model.chat_template);
    const std::string parser_flag = " (--tool-call-parser " + settings.tool_calls.parser + ")";
    if (tool_calls_.family)
        path_.log().info("tool calls: read with the " + std::string(toolcalls::family_name(*tool_calls_.family)) +
                         " parser" + parser_flag);
    else
        path_.log().info("tool calls: not parsed, answers are content" + parser_flag);
    reasoning_ = choose_reasoning(settings.reasoning, model.chat_template, model.tokenizer);
    path_.log().info(reasoning_.why);
    if (settings.passthrough_chat) {
        // The upstream parses the calls; a family only switches the checks of the calls it returns on.
        tool_calls_.family = toolcalls::ToolCallFamily::Hermes;
        path_.log().info(passthrough_note());
        return;
    }
    if (!path_.chat_renderer().refusal().empty() && !model.chat_template.empty())
        path_.log().info("chat requests will be refused: " + path_.chat_renderer().refusal());
}

void ChatService::register_routes(GuardedRoutes& routes) {
    add_route(routes, "POST", "/v1/chat/completions",
              [this](const http::HttpRequest& request) { return chat(request); });
}

api::ApiResult<std::optional<ToolCallSetup>> ChatService::checked_tool_calls(const api::ChatRequest& request) const {
    if (auto error = path_.check_model(request.generation.model)) return *error;
    if (auto error = api::validate_chat_request(request, path_.request_limits())) return *error;
    return tool_call_setup(request, tool_calls_);
}

api::ApiResult<GenerationOptions> ChatService::chat_options(const api::ChatRequest& request,
                                                            std::vector<int32_t> prompt,
                                                            const ResolvedSampling& sampling,
                                                            const std::optional<ToolCallSetup>& tools) {
    auto options =
        path_.generation_options(request.generation, std::move(prompt), request.logprobs ? request.top_logprobs : -1,
                                 sampling, "messages", std::nullopt);
    if (!options) return options.error();
    auto constraint = path_.output_constraint(request.generation, tools);
    if (!constraint) return constraint.error();
    options->constraint = std::move(constraint).value();
    if (auto error = path_.check_grammar_room(*options)) return *error;
    options->reasoning = reasoning_options(reasoning_, path_.settings().reasoning, request, options->prompt);
    if (tools) options->tool_calls = tools->family;  // each choice's output processor reads its calls
    if (auto error = path_.attach_disaggregation(request.generation, 0, 1, *options)) return *error;
    return options;
}

api::ApiResult<ChatTurn> ChatService::prepare(const http::HttpRequest& http_request, const api::Json& body,
                                              std::chrono::steady_clock::time_point received) {
    auto parsed = api::parse_chat_request_json(body);
    if (!parsed) return parsed.error();
    ChatTurn turn;
    turn.request = std::move(parsed).value();
    turn.received = received;
    auto tool_calls = checked_tool_calls(turn.request);
    if (!tool_calls) return tool_calls.error();
    turn.tool_calls = std::move(tool_calls).value();
    if (path_.settings().passthrough_chat) {
        if (auto refused = refused_in_passthrough(turn.request)) return *refused;
        turn.client = path_.client_of(http_request);
        turn.sampling = path_.resolve(turn.request.generation, turn.client);
        auto options = passthrough_options(body, turn);
        if (!options) return options.error();
        turn.options = std::move(options).value();
        return turn;
    }
    auto prompt = path_.chat_renderer().render(turn.request);
    if (!prompt) return prompt.error();
    turn.client = path_.client_of(http_request);
    turn.sampling = path_.resolve(turn.request.generation, turn.client);
    auto options = chat_options(turn.request, std::move(prompt).value(), turn.sampling, turn.tool_calls);
    if (!options) return options.error();
    turn.options = std::move(options).value();
    return turn;
}

api::ApiResult<GenerationOptions> ChatService::passthrough_options(const api::Json& body, const ChatTurn& turn) const {
    auto options = path_.passthrough_options(turn.request.generation, turn.sampling);
    if (!options) return options.error();
    options->passthrough_chat = passthrough_fields(body);
    return options;
}

api::ApiResult<GenerationJob> ChatService::start(ChatTurn& turn, const http::HttpRequest& http_request,
                                                 const char* endpoint, const std::string& response_id) {
    const auto prompt_tokens = static_cast<int64_t>(turn.options.prompt.size());
    std::function<std::string(int64_t)> prefix_note;
    if (path_.log().debug_enabled() && !turn.options.prompt.empty())
        prefix_note = prefix_departure_note(path_.model().tokenizer, turn.options.prompt);
    auto stream = path_.submit(std::move(turn.options));
    if (!stream) return stream.error();
    GenerationJob job = path_.generation_job(endpoint, http_request, turn.request.generation, turn.sampling,
                                             response_id, turn.received);
    job.client = turn.client;
    job.prefix_note = std::move(prefix_note);
    job.streams->add(*stream, 0, prompt_tokens);
    return job;
}

http::HttpResponse ChatService::chat(const http::HttpRequest& http_request) {
    const auto received = std::chrono::steady_clock::now();
    auto body = api::parse_json_object(http_request.body);
    if (!body) return api::to_http_response(body.error());
    auto turn = prepare(http_request, *body, received);
    if (!turn) return api::to_http_response(turn.error());
    const int choices = turn->options.n;
    const api::ResponseMeta meta = api::make_chat_meta(path_.settings().served_model_name, path_.system_fingerprint());
    auto job = start(*turn, http_request, "chat", meta.id);
    if (!job) return api::to_http_response(job.error());
    const ChatResponseBuilder::Shape shape{.choices = choices,
                                           .logprobs = turn->request.logprobs,
                                           .stream = job->stream,
                                           .include_usage = job->include_usage};
    auto builder = std::make_unique<ChatResponseBuilder>(path_.model().tokenizer, meta, shape);
    if (turn->tool_calls) builder->read_tool_calls(std::move(*turn->tool_calls), path_.metrics());
    builder->count_answers(path_.metrics());
    job->builder = std::move(builder);
    return path_.answer(std::move(job).value(), http_request);
}

}  // namespace tempered
